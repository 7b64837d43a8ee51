package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tlab/internal/untrusted"
)

// Field is one named value of a summary row: a number (float64), a string
// or a bool. Numbers that could not be measured are NaN.
type Field struct {
	Name  string
	Value any
}

// Summary is one row per cell: the cell's identity, its fields in column
// order (the workload's key parameters, the metrics, the settings it ran
// with, the emulator's own figures), and the swept fields last. The names
// are stable: docs/metrics.md defines each.
type Summary struct {
	Cell     string
	Profile  string
	Protocol string
	Workload string
	Rep      int
	Seed     uint64
	Fields   []Field
	Params   []Param
}

// IdentityColumns are a summary row's first columns.
var IdentityColumns = []string{"cell", "profile", "protocol", "workload", "rep", "seed"}

// Set sets a field, replacing an earlier value of the same name.
func (s *Summary) Set(name string, v any) {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			s.Fields[i].Value = v
			return
		}
	}
	s.Fields = append(s.Fields, Field{name, v})
}

// Get returns a field's value and whether the row has it.
func (s Summary) Get(name string) (any, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Float returns a numeric field, NaN when the row lacks it or it is not a
// number.
func (s Summary) Float(name string) float64 {
	v, _ := s.Get(name)
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	}
	return math.NaN()
}

// Int returns a numeric field rounded to an integer, or -1 when the field
// is missing or not a number: a count is never negative, so a check that
// wants 0 (no errors) cannot pass on a metric that vanished.
func (s Summary) Int(name string) int { return s.IntOr(name, -1) }

// IntOr returns a numeric field rounded to an integer, or absent when the
// field is missing or not a number: a check that wants 0 errors gives -1
// here, and so cannot pass on a metric that vanished.
func (s Summary) IntOr(name string, absent int) int {
	v := s.Float(name)
	if math.IsNaN(v) {
		return absent
	}
	return int(math.Round(v))
}

// Label returns a field as text ("" when absent).
func (s Summary) Label(name string) string {
	v, ok := s.Get(name)
	if !ok || v == nil {
		return ""
	}
	return FormatValue(v)
}

// Param returns a swept field's value ("" when not swept).
func (s Summary) Param(key string) string {
	for _, p := range s.Params {
		if p.Key == key {
			return p.Value
		}
	}
	return ""
}

// Columns returns the row's column names in order.
func (s Summary) Columns() []string {
	cols := slices.Clone(IdentityColumns)
	for _, f := range s.Fields {
		cols = append(cols, f.Name)
	}
	for _, p := range s.Params {
		cols = append(cols, p.Key)
	}
	return cols
}

// Values returns the row as a map from column names to values; NaN
// becomes nil (null in JSON, NA in R, NaN in pandas). An infinite number
// stays one: a delay percentile among messages that never completed is
// beyond any bound, which "not measured" would hide.
func (s Summary) Values() map[string]any {
	m := map[string]any{}
	for i, c := range s.Columns() {
		m[c] = s.value(i)
	}
	return m
}

// value returns the i-th column's value.
func (s Summary) value(i int) any {
	switch i {
	case 0:
		return s.Cell
	case 1:
		return s.Profile
	case 2:
		return s.Protocol
	case 3:
		return s.Workload
	case 4:
		return s.Rep
	case 5:
		return s.Seed
	}
	i -= len(IdentityColumns)
	if i < len(s.Fields) {
		// NaN and the empty text (a setting the protocol does not have)
		// are both "no value": null, so that a column of booleans or
		// numbers keeps its type in JSON and Parquet.
		switch v := s.Fields[i].Value.(type) {
		case float64:
			if math.IsNaN(v) {
				return nil
			}
		case string:
			if v == "" {
				return nil
			}
		}
		return s.Fields[i].Value
	}
	return s.Params[i-len(s.Fields)].Value
}

// MarshalJSON writes the row as one flat object, its keys in column order.
func (s Summary) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range s.Columns() {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(c)
		v, err := json.Marshal(JSONNumber(s.value(i)))
		if err != nil {
			return nil, fmt.Errorf("summary %s: %w", c, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Infinite numbers have no JSON form, and DuckDB's CSV reader types a
// column holding "inf" (or "Infinity") as text. summary.json and every CSV
// and JSON file of a run (through JSONNumber and FormatValue) write +Inf
// as the largest double, 1.7976931348623157e308 (math.MaxFloat64), and
// -Inf as its negative: a number, so that pandas, polars and DuckDB type
// the column as a float, larger than any measured value, so that sorting
// and bounds treat it as infinity. Parquet holds infinity itself.
// decodeSummary reads the largest double back as infinity, and also the
// strings "inf" and "-inf" of directories written before.
const (
	posInf = "inf"
	negInf = "-inf"
	// largestDouble is math.MaxFloat64 as FormatValue writes it.
	largestDouble = "1.7976931348623157e+308"
)

// JSONNumber is v as JSON can hold it: an infinite float as ±the largest
// double, anything else as it is.
func JSONNumber(v any) any {
	if x, ok := v.(float64); ok && math.IsInf(x, 0) {
		if x > 0 {
			return math.MaxFloat64
		}
		return -math.MaxFloat64
	}
	return v
}

// decodeSummary reads one flat object, keeping its key order. Keys in
// params are swept fields; so are keys with a dot when params is nil
// (directories of format 1 did not list them).
func decodeSummary(dec *json.Decoder, params map[string]bool) (Summary, error) {
	var s Summary
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return s, fmt.Errorf("want an object (%v)", err)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return s, err
		}
		key := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return s, fmt.Errorf("%s: %w", key, err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return s, fmt.Errorf("%s: %w", key, err)
		}
		switch key {
		case "cell":
			s.Cell, _ = v.(string)
		case "profile":
			s.Profile, _ = v.(string)
		case "protocol":
			s.Protocol, _ = v.(string)
		case "workload":
			s.Workload, _ = v.(string)
		case "rep":
			if err := json.Unmarshal(raw, &s.Rep); err != nil {
				return s, fmt.Errorf("rep: %w", err)
			}
		case "seed":
			// Decoded as the integer it is: through a float64 a seed
			// above 2^53 (most derived seeds) is rounded, and the cell it
			// names would meet another loss and jitter pattern.
			if err := json.Unmarshal(raw, &s.Seed); err != nil {
				return s, fmt.Errorf("seed: %w", err)
			}
		default:
			// Every other key becomes a column of summary.csv and
			// summary.parquet: one that cannot be is refused here, where
			// the file and row are known.
			if err := checkColumnName(key); err != nil {
				return s, err
			}
			isParam := params[key]
			if params == nil {
				isParam = strings.Contains(key, ".")
			}
			switch {
			case isParam:
				s.Params = append(s.Params, Param{Key: key, Value: FormatValue(v)})
			case v == nil:
				s.Fields = append(s.Fields, Field{key, math.NaN()})
			case v == posInf || v == math.MaxFloat64:
				s.Fields = append(s.Fields, Field{key, math.Inf(1)})
			case v == negInf || v == -math.MaxFloat64:
				s.Fields = append(s.Fields, Field{key, math.Inf(-1)})
			default:
				s.Fields = append(s.Fields, Field{key, v})
			}
		}
	}
	_, err := dec.Token()
	return s, err
}

// Columns lists the columns of rows: every row's columns in first-seen
// order, swept fields last.
func Columns(rows []Summary) []string {
	var cols, params []string
	seen := map[string]bool{}
	for _, r := range rows {
		for _, c := range r.Columns()[:len(IdentityColumns)+len(r.Fields)] {
			if !seen[c] {
				seen[c] = true
				cols = append(cols, c)
			}
		}
		for _, p := range r.Params {
			if !seen[p.Key] {
				seen[p.Key] = true
				params = append(params, p.Key)
			}
		}
	}
	return append(cols, params...)
}

// ColumnType is a summary column's declared type in summary.parquet.
type ColumnType int

const (
	// Inferred columns are typed by the values they hold: numbers as
	// doubles, booleans as booleans, text or a mix of kinds as text.
	Inferred ColumnType = iota
	// Number columns are doubles, also when no row has a value.
	Number
	// Integer columns are counts: 64-bit integers.
	Integer
)

// ColumnTypes declares the type of the columns it knows (the registered
// metrics': metrics.ColumnType); nil, or Inferred, leaves a column to its
// values.
type ColumnTypes func(column string) ColumnType

// WriteSummaries writes the summaries with every column typed by its
// values (WriteTypedSummaries with no declared types).
func WriteSummaries(dir string, rows []Summary) error {
	return WriteTypedSummaries(dir, rows, nil)
}

// WriteTypedSummaries writes summary.json (a list of flat objects),
// summary.csv (one row per cell) and summary.parquet into dir, each
// replaced atomically; types declares the Parquet type of the columns it
// knows, so that a count is an integer and a column of a metric no row
// could measure is still a number.
func WriteTypedSummaries(dir string, rows []Summary, types ColumnTypes) error {
	err := WriteAtomic(filepath.Join(dir, SummaryJSON), func(w io.Writer) error {
		if len(rows) == 0 {
			_, err := io.WriteString(w, "[]\n")
			return err
		}
		if _, err := io.WriteString(w, "[\n"); err != nil {
			return err
		}
		for i, r := range rows {
			b, err := r.MarshalJSON()
			if err != nil {
				return err
			}
			var ind bytes.Buffer
			if err := json.Indent(&ind, b, "  ", "  "); err != nil {
				return err
			}
			sep := ",\n"
			if i == len(rows)-1 {
				sep = "\n"
			}
			if _, err := fmt.Fprintf(w, "  %s%s", ind.Bytes(), sep); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "]\n")
		return err
	})
	if err != nil {
		return err
	}
	cols := Columns(rows)
	err = WriteAtomic(filepath.Join(dir, SummaryCSV), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(cols); err != nil {
			return err
		}
		for _, r := range rows {
			m := r.Values()
			rec := make([]string, len(cols))
			for i, c := range cols {
				rec[i] = FormatValue(m[c])
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
	if err != nil {
		return err
	}
	return writeSummaryParquet(dir, cols, rows, types)
}

// MaxSummaryFile bounds what is read of a summary.json: a row is about
// 2 KiB, and a run has at most MaxCells cells (scenario.MaxCells), so
// 512 MiB holds any run tlab writes.
const MaxSummaryFile = 512 << 20

// ReadSummaries reads the rows of a summary.json. params names the swept
// fields (from the manifest); nil means "guess as format 1 did".
func ReadSummaries(path string, params []string) ([]Summary, error) {
	b, err := untrusted.ReadFile(path, MaxSummaryFile)
	if err != nil {
		return nil, err
	}
	var set map[string]bool
	if params != nil {
		set = map[string]bool{}
		for _, p := range params {
			set[p] = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, fmt.Errorf("%s: want a list of rows", path)
	}
	var rows []Summary
	for dec.More() {
		s, err := decodeSummary(dec, set)
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", path, len(rows)+1, err)
		}
		rows = append(rows, s)
	}
	return rows, nil
}

// FormatValue renders a value as a CSV cell: numbers in the shortest exact
// form, nil and NaN as empty (NA), ±Inf as ±the largest double (see
// posInf).
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		switch {
		case math.IsNaN(x):
			return ""
		case math.IsInf(x, 1):
			return largestDouble
		case math.IsInf(x, -1):
			return "-" + largestDouble
		}
		// Plain decimals for ordinary magnitudes; exponents for tiny or
		// huge ones, so that a p-value of 7.5e-122 is not 120 zeros.
		if a := math.Abs(x); x != 0 && (a < 1e-6 || a >= 1e21) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}
