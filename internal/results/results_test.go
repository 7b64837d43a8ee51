package results

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleRows() []Summary {
	return []Summary{
		{Cell: "c1", Profile: "5g", Protocol: "tcp", Workload: "periodic", Rep: 1, Seed: 7,
			Fields: []Field{{"interval_ms", 25.0}, {"requests", 480.0}, {"delay_p50_ms", 11.25}, {"jitter_pct", math.NaN()}, {"tls_version", "1.3"}, {"resumption", true}},
			Params: []Param{{"workload.interval", "25ms"}, {"settings.tls_version", "1.3"}}},
		{Cell: "c2", Profile: "5g", Protocol: "h3", Workload: "periodic", Rep: 1, Seed: 7,
			Fields: []Field{{"interval_ms", 25.0}, {"requests", 479.0}, {"delay_p50_ms", 12.5}, {"jitter_pct", 3.5}, {"tls_version", "1.3"}, {"resumption", true}},
			Params: []Param{{"workload.interval", "25ms"}, {"settings.tls_version", "1.3"}}},
	}
}

// TestSummariesRoundTrip: what WriteSummaries writes, ReadSummaries reads
// back the same, column order, types and undefined values included.
func TestSummariesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	rows := sampleRows()
	if err := WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummaries(filepath.Join(dir, SummaryJSON), []string{"workload.interval", "settings.tls_version"})
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 {
		t.Fatalf("%d rows", len(back))
	}
	for i := range rows {
		if got, want := strings.Join(back[i].Columns(), ","), strings.Join(rows[i].Columns(), ","); got != want {
			t.Errorf("row %d columns:\n got %s\nwant %s", i, got, want)
		}
		for _, f := range rows[i].Fields {
			got, _ := back[i].Get(f.Name)
			if x, ok := f.Value.(float64); ok && math.IsNaN(x) {
				if !math.IsNaN(back[i].Float(f.Name)) {
					t.Errorf("row %d %s: NaN came back as %v", i, f.Name, got)
				}
				continue
			}
			if got != f.Value {
				t.Errorf("row %d %s: %v (%T), want %v (%T)", i, f.Name, got, got, f.Value, f.Value)
			}
		}
		if back[i].Param("workload.interval") != "25ms" || back[i].Seed != 7 || back[i].Rep != 1 {
			t.Errorf("row %d identity or params lost: %+v", i, back[i])
		}
	}
	// NaN is null in JSON and empty in CSV.
	var generic []map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, SummaryJSON))
	if err := json.Unmarshal(b, &generic); err != nil || generic[0]["jitter_pct"] != nil {
		t.Errorf("NaN in JSON: %v %v", err, generic[0]["jitter_pct"])
	}
	csv, _ := os.ReadFile(filepath.Join(dir, SummaryCSV))
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if lines[0] != "cell,profile,protocol,workload,rep,seed,interval_ms,requests,delay_p50_ms,jitter_pct,tls_version,resumption,workload.interval,settings.tls_version" ||
		!strings.Contains(lines[1], ",11.25,,1.3,true,") {
		t.Errorf("summary.csv:\n%s", csv)
	}
}

// TestFormatVersions: a directory of format 1 (no format, no params in the
// manifest) opens with its dotted keys as swept fields; a newer format is
// refused with both versions named.
func TestFormatVersions(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSummaries(dir, sampleRows()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"tool":"tlab","scenario":"old"}`), 0o644)
	r, err := Open(dir)
	if err != nil || r.Format != 1 || len(r.Rows) != 2 || r.Rows[0].Param("workload.interval") != "25ms" {
		t.Fatalf("format 1: %v %+v", err, r)
	}
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"format": 99}`), 0o644)
	_, err = Open(dir)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "format 99") || !strings.Contains(err.Error(), "1 to 2") {
		t.Errorf("newer format: %v", err)
	}
	m := &Manifest{Scenario: "new", Params: []string{"workload.interval", "settings.tls_version"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	if r, err := Open(dir); err != nil || r.Format != FormatVersion || len(r.Rows[0].Params) != 2 {
		t.Errorf("current format: %v %+v", err, r)
	}
}

// TestRecordsAreNAWhenFailed: a failed record has empty completion cells,
// the workload's extra columns follow the record's own, NaN is empty.
func TestRecordsAreNAWhenFailed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.csv")
	w, err := CreateRecords(path, Cell{ID: "c", Profile: "p", Protocol: "tcp", Rep: 1, Seed: 1, Key: []Field{{"interval_ms", 5.0}}}, []string{"x_ms"})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(Record{Seq: 0, SentMs: 1, DoneMs: 3, DelayMs: 2, Extra: map[string]float64{"x_ms": 1.5}})
	w.Write(Record{Seq: 1, SentMs: 5, DoneMs: 0, DelayMs: 0, Error: "timeout"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if !strings.HasPrefix(lines[0], "cell,profile,protocol,rep,interval_ms,seed,attempt,seq,") || !strings.HasSuffix(lines[0], ",error,x_ms") {
		t.Errorf("header %s", lines[0])
	}
	if !strings.HasSuffix(lines[1], ",1.5000") || !strings.Contains(lines[2], ",5.0000,,0.0000,,,,") || !strings.HasSuffix(lines[2], ",timeout,") {
		t.Errorf("rows:\n%s", b)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{"wifi+loss-ge-b": "wifi-loss-ge-b", "a/b c": "a-b-c", "..": "-", "x=1.5ms": "x=1.5ms"} {
		if got := SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFormatValueKeepsTinyValuesReadable: a p-value of 7.5e-122 is written
// with its exponent, not as 120 zeros; ordinary values as plain decimals.
func TestFormatValueKeepsTinyValuesReadable(t *testing.T) {
	for v, want := range map[float64]string{7.5e-122: "7.5e-122", 0.25: "0.25", 0: "0", 1e-7: "1e-07", 123456.5: "123456.5", -3e-9: "-3e-09", 0.000001: "0.000001"} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestRecordNumbersAsWritten: what tlab writes in a number column reads
// back (empty is not measured); a hand-edited NaN, Inf or word is an
// error naming the file, the line and the column.
func TestRecordNumbersAsWritten(t *testing.T) {
	for _, ok := range []string{fmtFloat(0.8123), fmtFloat(-3), fmtFloat(1e9)} {
		if _, present, err := ParseRecordNumber(ok); !present || err != nil {
			t.Errorf("%q: %v %v", ok, present, err)
		}
	}
	if v, present, err := ParseRecordNumber(fmtFloat(math.NaN())); present || err != nil || !math.IsNaN(v) {
		t.Errorf("an unmeasured value: %v %v %v", v, present, err)
	}
	for _, bad := range []string{"NaN", "+Inf", "-inf", "1e400", "fast", "1,5"} {
		if _, _, err := ParseRecordNumber(bad); err == nil {
			t.Errorf("%q read as a number", bad)
		}
	}
	cr := csv.NewReader(strings.NewReader("cell,delay_ms\nc1,1.5\nc1,NaN\n"))
	for range 3 {
		cr.Read()
	}
	_, _, perr := ParseRecordNumber("NaN")
	if err := RecordFieldError("run/records.csv", cr, 1, "delay_ms", perr); !strings.Contains(err.Error(), "run/records.csv:3: column delay_ms") {
		t.Errorf("error says %v", err)
	}
}

// TestInfiniteValuesSurvive: a delay percentile that fell among requests
// that never completed is infinite, beyond any bound, and must stay so
// through summary.json, summary.csv and summary.parquet: written as
// missing, it would read as "not measured" and pass unnoticed. CSV writes
// it as the largest binary64, (2 − 2^−52) × 2^1023 =
// 1.7976931348623157e+308 (DuckDB types a column holding "inf" as text);
// Parquet, which has infinity, holds +Inf.
func TestInfiniteValuesSurvive(t *testing.T) {
	dir := t.TempDir()
	rows := sampleRows()
	rows[0].Set("delay_p99_ms", math.Inf(1))
	if err := WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummaries(filepath.Join(dir, SummaryJSON), []string{"workload.interval", "settings.tls_version"})
	if err != nil {
		t.Fatal(err)
	}
	if v := back[0].Float("delay_p99_ms"); !math.IsInf(v, 1) {
		t.Errorf("summary.json gave back %v, want +Inf", v)
	}
	if v := back[1].Float("delay_p99_ms"); !math.IsNaN(v) {
		t.Errorf("a row without the metric gave %v, want NaN", v)
	}
	csvText := readFile(t, filepath.Join(dir, SummaryCSV))
	recs, err := csv.NewReader(strings.NewReader(csvText)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, c := range recs[0] {
		if c == "delay_p99_ms" {
			col = i
		}
	}
	if col < 0 || recs[1][col] != "1.7976931348623157e+308" || recs[2][col] != "" {
		t.Errorf("summary.csv's delay_p99_ms: want 1.7976931348623157e+308 then empty:\n%s", csvText)
	}
	pf, err := openParquet(t, filepath.Join(dir, SummaryParquet))
	if err != nil {
		t.Fatal(err)
	}
	got := parquetDoubles(t, pf, "delay_p99_ms")
	if len(got) != 2 || !math.IsInf(got[0], 1) || !math.IsNaN(got[1]) {
		t.Errorf("summary.parquet's delay_p99_ms %v, want [+Inf null]", got)
	}
}

// TestSchedDelayIsDerivedAsItIsWritten: a periodic record without an
// Extra map gets sched_delay_ms = done_ms − scheduled_ms in records.csv
// (12.5 − 10 = 2.5), a failed one NA, and a value a record carries itself
// is kept as it is.
func TestSchedDelayIsDerivedAsItIsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), RecordsFile)
	w, err := CreateRecords(path, Cell{ID: "c", Profile: "p", Protocol: "tcp", Rep: 1}, []string{"sched_delay_ms"})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(Record{Seq: 0, ScheduledMs: 10, SentMs: 10.5, DoneMs: 12.5, DelayMs: 2})
	w.Write(Record{Seq: 1, ScheduledMs: 20, SentMs: 20, Error: "timeout"})
	w.Write(Record{Seq: 2, ScheduledMs: 30, SentMs: 30, DoneMs: 31, DelayMs: 1, Extra: map[string]float64{"sched_delay_ms": 7}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	err = ScanRecords(path, []string{"sched_delay_ms"}, func(r RecordRow) error {
		got = append(got, fmt.Sprint(r.Values[0]))
		return nil
	})
	if err != nil || strings.Join(got, " ") != "2.5 NaN 7" {
		t.Errorf("sched_delay_ms %v (%v), want 2.5 NaN 7", got, err)
	}
}
