package experiment

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"tlab/internal/workload"
)

// RecordColumns are the fixed columns of records.csv, in order; a sweep
// adds one column per swept field after them.
var RecordColumns = []string{
	"cell", "profile", "protocol", "rep", "interval_ms", "req_size", "resp_size", "seed",
	"seq", "warmup", "scheduled_ms", "sent_ms", "lateness_ms", "done_ms", "delay_ms", "first_byte_ms",
	"req_bytes", "resp_bytes", "conn_id", "new_conn", "connect_ms", "handshake_ms", "resumed", "early_data", "error",
}

// recordWriter appends records to a CSV file: tidy data, one row per
// request, every variable a column.
type recordWriter struct {
	f      *os.File
	buf    *bufio.Writer
	csv    *csv.Writer
	params []string
}

// createRecords creates a records file with the fixed columns and one per
// swept field.
func createRecords(path string, params []string) (*recordWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	w := &recordWriter{f: f, buf: bufio.NewWriter(f), params: params}
	w.csv = csv.NewWriter(w.buf)
	if err := w.csv.Write(append(append([]string(nil), RecordColumns...), params...)); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func (w *recordWriter) write(spec CellSpec, r workload.Record) error {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	wl := spec.Workload
	row := []string{
		spec.ID, spec.Profile, spec.Protocol, strconv.Itoa(spec.Rep), f(msOf(wl.Interval)), strconv.Itoa(wl.ReqSize), strconv.Itoa(wl.RespSize), strconv.FormatUint(spec.Seed, 10),
		strconv.Itoa(r.Seq), strconv.FormatBool(r.Warmup), f(r.ScheduledMs), f(r.SentMs), f(r.LatenessMs), f(r.DoneMs), f(r.DelayMs), f(r.FirstByteMs),
		strconv.Itoa(r.ReqBytes), strconv.Itoa(r.RespBytes), strconv.Itoa(r.ConnID), strconv.FormatBool(r.NewConn),
		f(r.ConnectMs), f(r.HandshakeMs), strconv.FormatBool(r.Resumed), strconv.FormatBool(r.EarlyData), r.Error,
	}
	if !r.OK() {
		// A failed request has no delay: leave the fields empty (NA),
		// never zero.
		for _, i := range []int{13, 14, 15} {
			row[i] = ""
		}
	}
	for _, key := range w.params {
		v := ""
		for _, p := range spec.Params {
			if p.Key == key {
				v = p.Value
			}
		}
		row = append(row, v)
	}
	return w.csv.Write(row)
}

// flush makes everything written so far durable.
func (w *recordWriter) flush() error {
	w.csv.Flush()
	if err := w.csv.Error(); err != nil {
		return err
	}
	if err := w.buf.Flush(); err != nil {
		return err
	}
	return w.f.Sync()
}

func (w *recordWriter) Close() error {
	err := w.flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SummaryColumns lists the summary columns of rows: the fixed ones in
// their documented order, then the swept fields.
func SummaryColumns(rows []Summary) []string {
	cols := summaryFieldNames()
	seen := map[string]bool{}
	for _, r := range rows {
		for _, p := range r.Params {
			if !seen[p.Key] {
				seen[p.Key] = true
				cols = append(cols, p.Key)
			}
		}
	}
	return cols
}

// WriteSummaries writes summary.json (a list of objects) and summary.csv
// (one row per cell) into dir, each replaced atomically.
func WriteSummaries(dir string, rows []Summary) error {
	maps := make([]map[string]any, len(rows))
	for i, r := range rows {
		maps[i] = r.Fields()
	}
	b, err := json.MarshalIndent(maps, "", "  ")
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, "summary.json"), append(b, '\n')); err != nil {
		return err
	}
	cols := SummaryColumns(rows)
	return writeAtomicFunc(filepath.Join(dir, "summary.csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		cw.Write(cols)
		for _, m := range maps {
			rec := make([]string, len(cols))
			for i, c := range cols {
				rec[i] = formatValue(m[c])
			}
			cw.Write(rec)
		}
		cw.Flush()
		return cw.Error()
	})
}

// ReadSummaries reads the rows of a summary.json.
func ReadSummaries(path string) ([]Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var maps []map[string]any
	if err := json.Unmarshal(b, &maps); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	rows := make([]Summary, len(maps))
	for i, m := range maps {
		rows[i] = summaryFromFields(m)
	}
	return rows, nil
}

func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func writeAtomic(path string, data []byte) error {
	return writeAtomicFunc(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// writeAtomicFunc writes a file through a temporary one and renames it, so
// a reader (or a crash) never sees half a file.
func writeAtomicFunc(path string, fill func(io.Writer) error) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := fill(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
