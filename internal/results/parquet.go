package results

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"tlab/internal/untrusted"
)

// The Parquet files beside records.csv and summary.csv hold the same rows
// with typed columns (a week of records loads in pandas, polars, R's arrow
// or DuckDB in seconds, not minutes of CSV parsing). Their key-value
// metadata carries the results format version and the scenario, so that
// a file taken out of its run directory still says what it measured.
const (
	RecordsParquet = "records.parquet"
	SummaryParquet = "summary.parquet"

	// ParquetFormatKey and ParquetScenarioKey name the file metadata.
	ParquetFormatKey   = "tlab.format"
	ParquetScenarioKey = "tlab.scenario"

	// parquetRowGroup bounds a row group, so that writing tens of millions
	// of records holds one group in memory, not the whole file.
	parquetRowGroup = 1 << 20
)

// colKind is a column's type in Parquet; every column is optional, so
// that NA (a failed request's delay, a metric a protocol lacks) is null.
type colKind int

const (
	colString colKind = iota
	colDouble
	colInt
	colUint
	colBool
	// colTimestamp is an absolute time in ns since the UNIX epoch: an
	// integer with Parquet's TIMESTAMP(NANOS, UTC) type, which pandas,
	// polars and DuckDB read as a time.
	colTimestamp
)

var colGoTypes = map[colKind]reflect.Type{
	colString:    reflect.TypeFor[*string](),
	colDouble:    reflect.TypeFor[*float64](),
	colInt:       reflect.TypeFor[*int64](),
	colUint:      reflect.TypeFor[*uint64](),
	colBool:      reflect.TypeFor[*bool](),
	colTimestamp: reflect.TypeFor[*int64](),
}

// parquetTable is a flat schema whose columns keep the CSV's order
// (parquet.Group would sort them by name): it is made from a struct type
// built at run time, whose fields are the columns in order.
type parquetTable struct {
	names  []string
	kinds  []colKind
	schema *parquet.Schema
}

// checkColumnName says why name cannot be a Parquet column's, or nil.
func checkColumnName(name string) error {
	switch {
	case name == "":
		return errors.New("a column needs a name")
	case name == "-":
		return errors.New(`a column named "-" (Parquet takes it as no column)`)
	case strings.Contains(name, ","):
		return fmt.Errorf("%q holds a comma, which a Parquet column's name cannot", name)
	}
	return nil
}

// newParquetTable makes the table of columns names. A column's name
// travels in a struct tag, where parquet-go reads up to the first comma
// as the name and the rest as options, takes "-" as "leave the column
// out" and "" as "use the Go field's name": such names are refused (a
// hand-edited header ",0" once made parquet-go panic on option "0"), as
// are two columns of one name. The tag is quoted, so quotes and
// backslashes in a name survive.
func newParquetTable(name string, names []string, kinds []colKind) (*parquetTable, error) {
	fields := make([]reflect.StructField, len(names))
	seen := make(map[string]int, len(names))
	for i, n := range names {
		if err := checkColumnName(n); err != nil {
			return nil, fmt.Errorf("column %d: %w", i+1, err)
		}
		if j, ok := seen[n]; ok {
			return nil, fmt.Errorf("columns %d and %d are both named %q", j+1, i+1, n)
		}
		seen[n] = i
		fields[i] = reflect.StructField{
			Name: "C" + strconv.Itoa(i),
			Type: colGoTypes[kinds[i]],
			Tag:  reflect.StructTag(`parquet:` + strconv.Quote(n+",optional"+timestampTag(kinds[i]))),
		}
	}
	model := reflect.Zero(reflect.StructOf(fields)).Interface()
	return &parquetTable{names: names, kinds: kinds, schema: parquet.NewSchema(name, parquet.SchemaOf(model))}, nil
}

// timestampTag is the tag option that types a timestamp column.
func timestampTag(k colKind) string {
	if k == colTimestamp {
		return ",timestamp(nanosecond)"
	}
	return ""
}

// value makes column i's value from v (nil for null).
func (t *parquetTable) value(i int, v any) parquet.Value {
	if v == nil {
		return parquet.NullValue().Level(0, 0, i)
	}
	return parquet.ValueOf(v).Level(0, 1, i)
}

// parse makes column i's value from its CSV text; an empty cell or NA is
// null (an empty text is the empty string). The typed constructors keep
// this free of the boxing parquet.ValueOf needs: it runs once per value of
// tens of millions of records.
func (t *parquetTable) parse(i int, s string) (parquet.Value, error) {
	kind := t.kinds[i]
	if kind == colString {
		return parquet.ByteArrayValue([]byte(s)).Level(0, 1, i), nil
	}
	if s == "" || s == "NA" {
		return parquet.NullValue().Level(0, 0, i), nil
	}
	var v parquet.Value
	var err error
	switch kind {
	case colDouble:
		var f float64
		f, err = strconv.ParseFloat(s, 64)
		v = parquet.DoubleValue(f)
	case colInt, colTimestamp:
		var n int64
		n, err = strconv.ParseInt(s, 10, 64)
		v = parquet.Int64Value(n)
	case colUint:
		var n uint64
		n, err = strconv.ParseUint(s, 10, 64)
		v = parquet.Int64Value(int64(n))
	case colBool:
		var b bool
		b, err = strconv.ParseBool(s)
		v = parquet.BooleanValue(b)
	}
	if err != nil {
		return parquet.Value{}, fmt.Errorf("column %s: %q is not a%s", t.names[i], s, [...]string{"", " number", "n integer", "n integer", " true or false", " time in ns since the UNIX epoch"}[kind])
	}
	return v.Level(0, 1, i), nil
}

// writer opens a Parquet writer on w with tlab's metadata.
func (t *parquetTable) writer(w io.Writer, meta map[string]string) *parquet.Writer {
	opts := []parquet.WriterOption{t.schema, parquet.Compression(&parquet.Zstd)}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		opts = append(opts, parquet.KeyValueMetadata(k, meta[k]))
	}
	return parquet.NewWriter(w, opts...)
}

// parquetMeta is the metadata every Parquet file of the run dir carries:
// the format version and, where the directory has it, the scenario.
func parquetMeta(dir string) map[string]string {
	meta := map[string]string{ParquetFormatKey: strconv.Itoa(FormatVersion)}
	if b, err := untrusted.ReadFile(filepath.Join(dir, ScenarioFile), MaxScenarioFile); err == nil {
		meta[ParquetScenarioKey] = string(b)
	}
	return meta
}

// recordKinds types records.csv's columns: the record's own by what they
// hold, the cell's identity as text, seed unsigned; the workload's key
// and extra columns are numbers, the swept fields' values text.
func recordKinds(header []string, params map[string]bool) []colKind {
	own := map[string]colKind{
		"cell": colString, "profile": colString, "protocol": colString, "rep": colInt,
		"seed": colUint, "attempt": colInt, InSummaryColumn: colBool,
		"seq": colInt, "sent_unix_ns": colTimestamp, "warmup": colBool, "req_bytes": colInt, "resp_bytes": colInt, "conn_id": colInt,
		"new_conn": colBool, "resumed": colBool, "early_data": colBool, "error": colString,
	}
	kinds := make([]colKind, len(header))
	for i, h := range header {
		if k, ok := own[h]; ok {
			kinds[i] = k
		} else if params[h] {
			kinds[i] = colString
		} else {
			kinds[i] = colDouble
		}
	}
	return kinds
}

// WriteCellParquet writes a finished cell's records as
// CELLDIR/records.parquet, converted from its records.csv as the cell
// ends (between cells, never during one: the conversion takes a CPU).
// The run's records.parquet is then put together from these files by
// copying their row groups, so that the end of a long run costs seconds
// rather than a conversion of every record. params names the swept
// fields' columns (text); every other column the record does not define
// is a number.
func WriteCellParquet(cellDir string, params []string) error {
	return csvToParquet(filepath.Join(cellDir, RecordsFile), filepath.Join(cellDir, RecordsParquet), params,
		map[string]string{ParquetFormatKey: strconv.Itoa(FormatVersion)})
}

// WriteRecordsParquet writes DIR/records.parquet: the rows of
// DIR/records.csv (the complete cells', in cell order, as JoinRecords
// joins them), with the run's metadata. Each cell's rows come from its
// own records.parquet (WriteCellParquet), copied row group by row group;
// a cell without one (a run killed between a cell's end and its
// conversion, or written by an older tlab) is converted now.
func WriteRecordsParquet(dir string, params []string) error {
	entries, err := os.ReadDir(filepath.Join(dir, CellsDir))
	if err != nil {
		return err
	}
	type cellFile struct {
		name string
		f    *os.File
		pf   *parquet.File
	}
	var cells []cellFile
	defer func() {
		for _, c := range cells {
			c.f.Close()
		}
	}()
	for _, e := range entries {
		cdir := filepath.Join(dir, CellsDir, e.Name())
		if !CellDone(cdir) {
			continue
		}
		path := filepath.Join(cdir, RecordsParquet)
		if !cellParquetFresh(cdir) {
			if err := WriteCellParquet(cdir, params); err != nil {
				return fmt.Errorf("cell %s: %w", e.Name(), err)
			}
		}
		f, err := untrusted.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // a cell without records
		}
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		pf, err := parquet.OpenFile(f, fi.Size())
		if err != nil {
			f.Close()
			return fmt.Errorf("cell %s: %s: %w", e.Name(), RecordsParquet, err)
		}
		cells = append(cells, cellFile{e.Name(), f, pf})
	}
	if len(cells) == 0 {
		return nil // no records: no file
	}
	return WriteAtomic(filepath.Join(dir, RecordsParquet), func(w io.Writer) error {
		opts := []parquet.WriterOption{cells[0].pf.Schema(), parquet.Compression(&parquet.Zstd)}
		meta := parquetMeta(dir)
		for _, k := range slices.Sorted(maps.Keys(meta)) {
			opts = append(opts, parquet.KeyValueMetadata(k, meta[k]))
		}
		pw := parquet.NewWriter(w, opts...)
		for _, c := range cells {
			if !parquet.EqualNodes(c.pf.Schema(), cells[0].pf.Schema()) {
				return fmt.Errorf("cell %s: its records have other columns than the first cell's", c.name)
			}
			for _, rg := range c.pf.RowGroups() {
				if _, err := pw.WriteRowGroup(rg); err != nil {
					return fmt.Errorf("cell %s: %w", c.name, err)
				}
			}
		}
		return pw.Close()
	})
}

// cellParquetFresh tells whether a cell's records.parquet exists and is
// no older than its records.csv (a cell's files do not change once it is
// done; a re-run cell starts from an empty directory).
func cellParquetFresh(cellDir string) bool {
	pq, err := os.Stat(filepath.Join(cellDir, RecordsParquet))
	if err != nil {
		return false
	}
	csvInfo, err := os.Stat(filepath.Join(cellDir, RecordsFile))
	return err == nil && !pq.ModTime().Before(csvInfo.ModTime())
}

// csvToParquet writes the records CSV at src as Parquet at dst, streaming
// (one row group in memory at a time). An empty src (not even a header)
// writes no file.
func csvToParquet(src, dst string, params []string, meta map[string]string) error {
	name := filepath.Base(src)
	f, cr, header, err := openCSV(src, name)
	if err != nil || header == nil {
		return err
	}
	defer f.Close()
	set := map[string]bool{}
	for _, p := range params {
		set[p] = true
	}
	t, err := newParquetTable("record", header, recordKinds(header, set))
	if err != nil {
		return fmt.Errorf("%s:1: %w", name, err)
	}
	return WriteAtomic(dst, func(w io.Writer) error {
		pw := t.writer(w, meta)
		// The batch's rows are reused: WriteRows copies their values.
		batch := make([]parquet.Row, 0, 1024)
		rows := 0
		flush := func() error {
			if _, err := pw.WriteRows(batch); err != nil {
				return err
			}
			batch = batch[:0]
			return nil
		}
		for line := 2; ; line++ {
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if len(rec) != len(header) {
				return fmt.Errorf("%s:%d: %d fields, the header has %d", name, line, len(rec), len(header))
			}
			row := batch[:len(batch)+1][len(batch)]
			if row == nil {
				row = make(parquet.Row, len(rec))
			}
			for i, s := range rec {
				if row[i], err = t.parse(i, s); err != nil {
					return fmt.Errorf("%s:%d: %w", name, line, err)
				}
			}
			batch = append(batch, row)
			if len(batch) == cap(batch) {
				if err := flush(); err != nil {
					return err
				}
			}
			if rows++; rows%parquetRowGroup == 0 {
				if err := flush(); err != nil {
					return err
				}
				if err := pw.Flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		return pw.Close()
	})
}

// writeSummaryParquet writes summary.parquet: the rows of summary.csv,
// each column of a declared type as declared (types: counts as integers,
// other metrics as doubles), rep and seed as integers, every other column
// typed by the values it holds (numbers as doubles, booleans as booleans;
// a column holding more than one kind is text).
func writeSummaryParquet(dir string, cols []string, rows []Summary, types ColumnTypes) error {
	kinds := make([]colKind, len(cols))
	values := make([]map[string]any, len(rows))
	for j, r := range rows {
		values[j] = r.Values()
	}
	for i, c := range cols {
		kinds[i] = summaryKind(c, values)
		if types == nil || i < len(IdentityColumns) {
			continue
		}
		switch types(c) {
		case Number:
			kinds[i] = colDouble
		case Integer:
			kinds[i] = colInt
		}
	}
	t, err := newParquetTable("summary", cols, kinds)
	if err != nil {
		return fmt.Errorf("%s: %w", SummaryParquet, err)
	}
	return WriteAtomic(filepath.Join(dir, SummaryParquet), func(w io.Writer) error {
		pw := t.writer(w, parquetMeta(dir))
		out := make([]parquet.Row, len(rows))
		for j, m := range values {
			row := make(parquet.Row, len(cols))
			for i, c := range cols {
				row[i] = t.value(i, summaryValue(kinds[i], m[c]))
			}
			out[j] = row
		}
		if _, err := pw.WriteRows(out); err != nil {
			return err
		}
		return pw.Close()
	})
}

func summaryKind(col string, rows []map[string]any) colKind {
	switch col {
	case "rep":
		return colInt
	case "seed":
		return colUint
	}
	kind, seen := colString, false
	for _, m := range rows {
		var k colKind
		switch m[col].(type) {
		case nil:
			continue
		case float64, int:
			k = colDouble
		case bool:
			k = colBool
		default:
			k = colString
		}
		if seen && k != kind {
			return colString
		}
		kind, seen = k, true
	}
	return kind
}

// summaryValue converts v to the Go type of its column's kind.
func summaryValue(kind colKind, v any) any {
	if v == nil {
		return nil
	}
	switch kind {
	case colInt:
		switch x := v.(type) {
		case int:
			return int64(x)
		case float64:
			if math.IsInf(x, 0) || x != math.Trunc(x) {
				return nil // not a count: no value rather than a wrong one
			}
			return int64(x)
		case int64, uint64:
			return v
		}
		return nil // declared a count, holding text: no value
	case colDouble:
		switch x := v.(type) {
		case int:
			return float64(x)
		case float64:
			return x
		}
		return nil // declared a number, holding text: no value
	case colString:
		if _, ok := v.(string); !ok {
			return FormatValue(v)
		}
	}
	return v
}
