package experiment

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"tlab/internal/workload"
)

// cellBase is what every record row of a cell repeats, so that the records
// file is tidy: one row per request, every variable a column.
type cellBase struct {
	Profile    string
	Protocol   string
	IntervalMs float64
	ReqSize    int
	RespSize   int
	Seed       uint64
}

// RecordColumns are the columns of records.csv, in order.
var RecordColumns = []string{
	"profile", "protocol", "interval_ms", "req_size", "resp_size", "seed",
	"seq", "warmup", "scheduled_ms", "sent_ms", "lateness_ms", "done_ms", "delay_ms", "first_byte_ms",
	"req_bytes", "resp_bytes", "conn_id", "new_conn", "connect_ms", "handshake_ms", "resumed", "early_data", "error",
}

// outputs writes records as they come and the summary after each cell.
type outputs struct {
	dir     string
	records *os.File
	buf     *bufio.Writer
	csv     *csv.Writer
}

func openOutputs(dir string) (*outputs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "records.csv"))
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	o := &outputs{dir: dir, records: f, buf: bufio.NewWriter(f)}
	o.csv = csv.NewWriter(o.buf)
	if err := o.csv.Write(RecordColumns); err != nil {
		f.Close()
		return nil, err
	}
	return o, nil
}

func (o *outputs) writeRecord(b cellBase, r workload.Record) error {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	row := []string{
		b.Profile, b.Protocol, f(b.IntervalMs), strconv.Itoa(b.ReqSize), strconv.Itoa(b.RespSize), strconv.FormatUint(b.Seed, 10),
		strconv.Itoa(r.Seq), strconv.FormatBool(r.Warmup), f(r.ScheduledMs), f(r.SentMs), f(r.LatenessMs), f(r.DoneMs), f(r.DelayMs), f(r.FirstByteMs),
		strconv.Itoa(r.ReqBytes), strconv.Itoa(r.RespBytes), strconv.Itoa(r.ConnID), strconv.FormatBool(r.NewConn),
		f(r.ConnectMs), f(r.HandshakeMs), strconv.FormatBool(r.Resumed), strconv.FormatBool(r.EarlyData), r.Error,
	}
	if !r.OK() {
		// A failed request has no delay: leave the fields empty (NA),
		// never zero.
		for _, i := range []int{11, 12, 13} {
			row[i] = ""
		}
	}
	return o.csv.Write(row)
}

func (o *outputs) flush() error {
	o.csv.Flush()
	if err := o.csv.Error(); err != nil {
		return err
	}
	if err := o.buf.Flush(); err != nil {
		return err
	}
	return o.records.Sync()
}

// writeSummary rewrites summary.json with every row so far, atomically.
func (o *outputs) writeSummary(rows []Summary) error {
	b, err := json.MarshalIndent(jsonSafe(rows), "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(o.dir, ".summary.json.tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(o.dir, "summary.json"))
}

func (o *outputs) Close() error {
	err := o.flush()
	if cerr := o.records.Close(); err == nil {
		err = cerr
	}
	return err
}

// jsonSafe turns rows into maps by their JSON names, with NaN and
// infinities (which JSON cannot hold) as null.
func jsonSafe(rows []Summary) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = r.Fields()
	}
	return out
}
