package results

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"strconv"
)

// Record is one measured event as the application saw it: a request, a
// stream of a bulk transfer, a message, a frame. Times are milliseconds
// since the workload started. A record is one row of tidy data.
//
// When Error is set the event failed: the times that need a completion
// (DoneMs, DelayMs, FirstByteMs) are not valid and are written as empty
// cells (NA), never as zeros; SentMs, ScheduledMs and the connection fields
// say how far it got.
type Record struct {
	Seq         int     `json:"seq"`
	Warmup      bool    `json:"warmup"`
	ScheduledMs float64 `json:"scheduled_ms"`
	SentMs      float64 `json:"sent_ms"`
	// LatenessMs is how late the event was sent against its schedule.
	LatenessMs float64 `json:"lateness_ms"`
	DoneMs     float64 `json:"done_ms"`
	// DelayMs is the response delay: from sending to having the whole
	// response.
	DelayMs     float64 `json:"delay_ms"`
	FirstByteMs float64 `json:"first_byte_ms"`
	ReqBytes    int     `json:"req_bytes"`
	RespBytes   int     `json:"resp_bytes"`
	ConnID      int     `json:"conn_id"`
	NewConn     bool    `json:"new_conn"`
	// ConnectMs and HandshakeMs are the transport (TCP) and TLS or QUIC
	// handshakes of a new connection.
	ConnectMs   float64 `json:"connect_ms"`
	HandshakeMs float64 `json:"handshake_ms"`
	Resumed     bool    `json:"resumed"`
	EarlyData   bool    `json:"early_data"`
	Error       string  `json:"error,omitempty"`
	// SentUnixNs is when the event was sent by the host's wall clock, in
	// nanoseconds since the UNIX epoch: the workload's clock origin plus
	// SentMs, so that records line up with a capture's timestamps. 0 when
	// the workload does not know it (never sent, a command stack's events).
	SentUnixNs int64 `json:"-"`
	// Unsent marks a scheduled event that was never sent (its Error says
	// why); it is counted apart from failures.
	Unsent bool `json:"-"`
	// Extra holds the columns a workload adds (named by its
	// Columns); a missing or NaN value is written as NA.
	Extra map[string]float64 `json:"-"`
}

// OK tells whether the event completed.
func (r Record) OK() bool { return r.Error == "" }

// RecordColumns are the record's own columns in records.csv, in order.
var RecordColumns = []string{
	"seq", "warmup", "scheduled_ms", "sent_ms", "sent_unix_ns", "lateness_ms", "done_ms", "delay_ms", "first_byte_ms",
	"req_bytes", "resp_bytes", "conn_id", "new_conn", "connect_ms", "handshake_ms", "resumed", "early_data", "error",
}

// derivedColumns are workload columns that follow from a record's own
// fields: a record that carries no value of its own for one gets it here,
// as it is written. A workload that names one in its Columns need not
// give each record an Extra map, which costs more (about 340 bytes for
// one entry) than the record itself (152): for a cell of a million
// records, a third of a gigabyte.
var derivedColumns = map[string]func(Record) float64{
	// The delay from the schedule (periodic), for completed events.
	"sched_delay_ms": func(r Record) float64 {
		if !r.OK() {
			return math.NaN()
		}
		return r.DoneMs - r.ScheduledMs
	},
}

// CellColumns identify a record's cell in records.csv; the workload's key
// columns follow them, then "seed" and "attempt".
var CellColumns = []string{"cell", "profile", "protocol", "rep"}

// Cell identifies a cell in records and summaries.
type Cell struct {
	ID       string
	Profile  string
	Protocol string
	Workload string
	Rep      int
	Seed     uint64
	// Key are the workload's parameters that identify the cell
	// (interval_ms, req_size, ...), as numbers.
	Key []Field
	// Params are the swept fields' values, in the scenario's order.
	Params []Param
	// Attempt numbers the cell's runs: a disturbed one is run again, and
	// every attempt's records are kept.
	Attempt int
}

// RecordWriter appends records to a CSV file: tidy data, one row per
// event, every variable a column. The header is: CellColumns, the
// workload's key columns, seed, attempt, RecordColumns, the workload's
// extra columns, and one column per swept field.
type RecordWriter struct {
	f     *os.File
	buf   *bufio.Writer
	csv   *csv.Writer
	cell  Cell
	extra []string
	n     int
}

// CreateRecords creates a records file for one cell.
func CreateRecords(path string, cell Cell, extra []string) (*RecordWriter, error) {
	f, err := Create(path)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	w := &RecordWriter{f: f, buf: bufio.NewWriter(f), cell: cell, extra: extra}
	w.csv = csv.NewWriter(w.buf)
	header := append([]string(nil), CellColumns...)
	for _, k := range cell.Key {
		header = append(header, k.Name)
	}
	header = append(header, "seed", "attempt")
	header = append(header, RecordColumns...)
	header = append(header, extra...)
	for _, p := range cell.Params {
		header = append(header, p.Key)
	}
	if err := w.csv.Write(header); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func fmtFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

// unixNs writes an absolute time in ns, empty when unknown (0).
func unixNs(ns int64) string {
	if ns == 0 {
		return ""
	}
	return strconv.FormatInt(ns, 10)
}

// Write appends one record; every 100 records it makes them durable, so an
// interruption loses at most those.
func (w *RecordWriter) Write(r Record) error {
	c := w.cell
	row := []string{c.ID, c.Profile, c.Protocol, strconv.Itoa(c.Rep)}
	for _, k := range c.Key {
		row = append(row, FormatValue(k.Value))
	}
	row = append(row, strconv.FormatUint(c.Seed, 10), strconv.Itoa(max(c.Attempt, 1)))
	done, delay, first := fmtFloat(r.DoneMs), fmtFloat(r.DelayMs), fmtFloat(r.FirstByteMs)
	if !r.OK() {
		// A failed event has no completion: NA, never zero.
		done, delay, first = "", "", ""
	}
	row = append(row,
		strconv.Itoa(r.Seq), strconv.FormatBool(r.Warmup), fmtFloat(r.ScheduledMs), fmtFloat(r.SentMs), unixNs(r.SentUnixNs), fmtFloat(r.LatenessMs), done, delay, first,
		strconv.Itoa(r.ReqBytes), strconv.Itoa(r.RespBytes), strconv.Itoa(r.ConnID), strconv.FormatBool(r.NewConn),
		fmtFloat(r.ConnectMs), fmtFloat(r.HandshakeMs), strconv.FormatBool(r.Resumed), strconv.FormatBool(r.EarlyData), r.Error)
	for _, name := range w.extra {
		v, ok := r.Extra[name]
		if !ok {
			v = math.NaN()
			if derive, derived := derivedColumns[name]; derived {
				v = derive(r)
			}
		}
		row = append(row, fmtFloat(v))
	}
	for _, p := range c.Params {
		row = append(row, p.Value)
	}
	if err := w.csv.Write(row); err != nil {
		return err
	}
	if w.n++; w.n%100 == 0 {
		return w.Flush()
	}
	return nil
}

// SetAttempt numbers the records written from now on.
func (w *RecordWriter) SetAttempt(n int) { w.cell.Attempt = n }

// Flush makes everything written so far durable.
func (w *RecordWriter) Flush() error {
	w.csv.Flush()
	if err := w.csv.Error(); err != nil {
		return err
	}
	if err := w.buf.Flush(); err != nil {
		return err
	}
	return w.f.Sync()
}

// Close flushes and closes the file.
func (w *RecordWriter) Close() error {
	err := w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ParseRecordNumber reads a number column of records.csv as tlab writes
// it: empty is "not measured" (present false); anything else must be a
// finite number. A hand-edited NaN, Inf or word is an error, so that a
// reader never counts it, nor skips it in silence.
func ParseRecordNumber(s string) (v float64, present bool, err error) {
	if s == "" {
		return math.NaN(), false, nil
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return math.NaN(), false, fmt.Errorf("%q is not a finite number", s)
	}
	return v, true, nil
}

// RecordFieldError says where in records.csv a field is wrong: the file,
// its line and the column's name.
func RecordFieldError(path string, cr *csv.Reader, col int, name string, err error) error {
	line, _ := cr.FieldPos(col)
	return fmt.Errorf("%s:%d: column %s: %w", path, line, name, err)
}
