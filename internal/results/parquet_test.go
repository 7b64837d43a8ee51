package results

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// parquetRun writes a run directory as a sweep does: two cells' records
// (a failed request, a workload column with NA, a swept field; more rows
// than one batch of the writer), joined, and the summaries.
const perCell = 1500

func parquetRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ScenarioFile), []byte("name: parquet-test\nprotocols: [tcp, h3]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"tcp", "h3"} {
		cdir := CellDir(dir, p)
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			t.Fatal(err)
		}
		cell := Cell{ID: p, Profile: "5g", Protocol: p, Rep: 1, Seed: 1 << 63, Key: []Field{{"interval_ms", 25.0}},
			Params: []Param{{"workload.interval", "25ms"}}}
		w, err := CreateRecords(filepath.Join(cdir, RecordsFile), cell, []string{"x_ms"})
		if err != nil {
			t.Fatal(err)
		}
		for seq := range perCell {
			r := Record{Seq: seq, Warmup: seq == 0, ScheduledMs: 25 * float64(seq), SentMs: 25*float64(seq) + 0.01, DoneMs: 25*float64(seq) + 11.5 + float64(i),
				DelayMs: 11.49 + float64(i), ReqBytes: 256, RespBytes: 256, ConnID: 1, NewConn: seq == 0, Extra: map[string]float64{"x_ms": float64(seq) / 3}}
			if seq == 3 {
				r.Error, r.DoneMs, r.DelayMs = "timeout, after 1s", 0, 0
				r.Extra = map[string]float64{"x_ms": math.NaN()}
			}
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := MarkDone(cdir); err != nil {
			t.Fatal(err)
		}
	}
	if err := JoinRecords(dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteRecordsParquet(dir, []string{"workload.interval"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummaries(dir, sampleRows()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openParquet opens a Parquet file a test wrote; its file is closed when
// the test ends.
func openParquet(t testing.TB, path string) (*parquet.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return parquet.OpenFile(f, st.Size())
}

// parquetColumns lists a Parquet file's column names in order.
func parquetColumns(pf *parquet.File) []string {
	var names []string
	for _, c := range pf.Schema().Fields() {
		names = append(names, c.Name())
	}
	return names
}

// TestParquetMatchesCSV: records.parquet and summary.parquet hold the
// CSV's columns in order, typed (integers, doubles, booleans, text), NA
// as null, with the format and the scenario in the file's metadata.
func TestParquetMatchesCSV(t *testing.T) {
	dir := parquetRun(t)
	pf, err := openParquet(t, filepath.Join(dir, RecordsParquet))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := pf.Lookup(ParquetFormatKey); v != "2" {
		t.Errorf("format metadata %q", v)
	}
	if v, _ := pf.Lookup(ParquetScenarioKey); !strings.Contains(v, "parquet-test") {
		t.Errorf("scenario metadata %q", v)
	}
	csvHeader := strings.Split(strings.SplitN(readFile(t, filepath.Join(dir, RecordsFile)), "\n", 2)[0], ",")
	var names []string
	kinds := map[string]parquet.Kind{}
	for _, c := range pf.Schema().Fields() {
		names = append(names, c.Name())
		kinds[c.Name()] = c.Type().Kind()
	}
	if strings.Join(names, ",") != strings.Join(csvHeader, ",") {
		t.Errorf("columns %v, CSV %v", names, csvHeader)
	}
	for col, want := range map[string]parquet.Kind{"cell": parquet.ByteArray, "seq": parquet.Int64, "warmup": parquet.Boolean, "delay_ms": parquet.Double,
		"seed": parquet.Int64, "x_ms": parquet.Double, "workload.interval": parquet.ByteArray, "error": parquet.ByteArray} {
		if kinds[col] != want {
			t.Errorf("column %s is %v, want %v", col, kinds[col], want)
		}
	}
	if pf.NumRows() != 2*perCell {
		t.Errorf("%d rows, want %d", pf.NumRows(), 2*perCell)
	}
	// Read back as typed rows: the failed request's delay is null, not 0.
	type rec struct {
		Cell    string   `parquet:"cell"`
		Seed    uint64   `parquet:"seed"`
		Seq     *int64   `parquet:"seq"`
		DelayMs *float64 `parquet:"delay_ms"`
		Error   *string  `parquet:"error"`
		X       *float64 `parquet:"x_ms"`
	}
	rows, err := parquet.Read[rec](pf, pf.Size())
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[3]; r.DelayMs != nil || r.X != nil || r.Error == nil || *r.Error != "timeout, after 1s" || r.Seed != 1<<63 {
		t.Errorf("failed record read back as %+v", r)
	}
	// Cells join in their directories' order: h3, then tcp.
	if r := rows[perCell+1]; r.Cell != "tcp" || r.DelayMs == nil || *r.DelayMs != 11.49 || *r.Seq != 1 {
		t.Errorf("tcp's second record read back as %+v", r)
	}
}

// TestParquetReadByPyarrow: pyarrow (what pandas, polars and R's arrow
// read Parquet with) reads both files and finds every value the CSV has.
func TestParquetReadByPyarrow(t *testing.T) {
	if exec.Command("python3", "-c", "import pyarrow").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("pyarrow is missing on CI: scripts/setup --tests installs it")
		}
		t.Skip("pyarrow is not installed (scripts/setup --tests installs it)")
	}
	dir := parquetRun(t)
	out, err := exec.Command("python3", "testdata/parquet_vs_csv.py",
		filepath.Join(dir, RecordsParquet), filepath.Join(dir, RecordsFile),
		filepath.Join(dir, SummaryParquet), filepath.Join(dir, SummaryCSV)).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("pyarrow disagrees with the CSV: %v", err)
	}
	for _, want := range []string{"records.parquet: 3000 rows", "seq:int64", "delay_ms:double", "warmup:bool", "seed:uint64", "summary.parquet: 2 rows", "resumption:bool", "rep:int64", "mismatches: 0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("pyarrow's reading lacks %q", want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkRecordsParquet times the three ways records reach Parquet, in
// ns per record: a cell's conversion as it ends (cell), the run's file put
// together from the cells' files at the run's end (run-from-cells), and
// the former end of a run, the joined records.csv converted whole
// (run-from-csv); beside them the join of the cells' records.csv that
// the end of a run also does (join-csv), and the files' sizes per record.
//
//	go test ./internal/results -run ^$ -bench RecordsParquet -benchtime 3x
func BenchmarkRecordsParquet(b *testing.B) {
	dir := b.TempDir()
	const cells, n = 4, 250_000
	for c := range cells {
		cdir := CellDir(dir, fmt.Sprintf("c%d", c))
		os.MkdirAll(cdir, 0o755)
		w, err := CreateRecords(filepath.Join(cdir, RecordsFile), Cell{ID: fmt.Sprintf("c%d", c), Profile: "5g", Protocol: "tcp", Rep: 1, Seed: 1, Key: []Field{{"interval_ms", 25.0}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for seq := range n {
			s := 25 * float64(seq)
			w.Write(Record{Seq: seq, ScheduledMs: s, SentMs: s + 0.013, DoneMs: s + 11.7 + float64(seq%97)/31, DelayMs: 11.687 + float64(seq%97)/31, ReqBytes: 256, RespBytes: 256, ConnID: 1})
		}
		w.Close()
		MarkDone(cdir)
	}
	if err := JoinRecords(dir); err != nil {
		b.Fatal(err)
	}
	first := CellDir(dir, "c0")
	b.Run("cell", func(b *testing.B) {
		for b.Loop() {
			if err := WriteCellParquet(first, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	})
	for c := range cells {
		if err := WriteCellParquet(CellDir(dir, fmt.Sprintf("c%d", c)), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("join-csv", func(b *testing.B) {
		for b.Loop() {
			if err := JoinRecords(dir); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cells*n), "ns/record")
	})
	b.Run("run-from-cells", func(b *testing.B) {
		for b.Loop() {
			if err := WriteRecordsParquet(dir, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cells*n), "ns/record")
		csvInfo, _ := os.Stat(filepath.Join(dir, RecordsFile))
		pqInfo, _ := os.Stat(filepath.Join(dir, RecordsParquet))
		b.ReportMetric(float64(csvInfo.Size())/(cells*n), "csv-B/record")
		b.ReportMetric(float64(pqInfo.Size())/(cells*n), "parquet-B/record")
	})
	b.Run("run-from-csv", func(b *testing.B) {
		for b.Loop() {
			if err := csvToParquet(filepath.Join(dir, RecordsFile), filepath.Join(dir, "whole.parquet"), nil, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cells*n), "ns/record")
	})
}

// TestRunParquetIsCopiedFromTheCells: the run's records.parquet is put
// together from the cells' own files, not converted again from the CSV.
// A cell's CSV spoiled after its conversion (its time kept) leaves the
// run's file whole; removing a cell's file makes it converted again.
func TestRunParquetIsCopiedFromTheCells(t *testing.T) {
	dir := parquetRun(t)
	want, err := os.ReadFile(filepath.Join(dir, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"tcp", "h3"} {
		if _, err := os.Stat(filepath.Join(CellDir(dir, c), RecordsParquet)); err != nil {
			t.Fatalf("cell %s has no records.parquet of its own: %v", c, err)
		}
	}
	spoiled := filepath.Join(CellDir(dir, "tcp"), RecordsFile)
	fi, _ := os.Stat(spoiled)
	os.WriteFile(spoiled, []byte("not,a,records,file\n1,2\n"), 0o644)
	old := fi.ModTime().Add(-time.Hour)
	os.Chtimes(spoiled, old, old)
	if err := WriteRecordsParquet(dir, []string{"workload.interval"}); err != nil {
		t.Fatalf("the run's Parquet read the spoiled CSV, not the cell's Parquet: %v", err)
	}
	pf, err := openParquet(t, filepath.Join(dir, RecordsParquet))
	if err != nil || pf.NumRows() != 2*perCell {
		t.Fatalf("%v, want %d rows copied from the cells", err, 2*perCell)
	}
	// Without its file, a cell is converted from its CSV: the spoiled
	// one is now an error naming it.
	os.Remove(filepath.Join(CellDir(dir, "tcp"), RecordsParquet))
	if err := WriteRecordsParquet(dir, []string{"workload.interval"}); err == nil || !strings.Contains(err.Error(), "tcp") {
		t.Errorf("a cell without its Parquet: %v, want its CSV converted (and its error)", err)
	}
	os.WriteFile(spoiled, want, 0o644) // not the cell's, but a whole records file
	if err := WriteRecordsParquet(dir, []string{"workload.interval"}); err != nil {
		t.Fatalf("a cell converted at the end: %v", err)
	}
	if pf, err := openParquet(t, filepath.Join(dir, RecordsParquet)); err != nil || pf.NumRows() != 3*perCell {
		t.Errorf("%v: want the re-converted cell's %d rows beside the other's %d", err, 2*perCell, perCell)
	}
}

// TestParquetColumnNames: a header's names reach a cell's records.parquet
// (and so the run's) as they are, quotes and backslashes too; a name parquet-go would read as
// something else (a comma starts its options, "-" drops the column, ""
// takes the Go field's name) or a name twice is an error naming the file
// and the column, never a panic or a renamed column. A summary.json
// metric that could not become a column is refused when it is read.
func TestParquetColumnNames(t *testing.T) {
	dir := t.TempDir()
	header := []string{"cell", `say "hi"`, `back\slash`, "délai_ms"}
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write(header)
	w.Write([]string{"c1", "1", "2", "3"})
	w.Flush()
	if err := os.WriteFile(filepath.Join(dir, RecordsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteCellParquet(dir, nil); err != nil {
		t.Fatal(err)
	}
	pf, err := openParquet(t, filepath.Join(dir, RecordsParquet))
	if err != nil {
		t.Fatal(err)
	}
	if names := parquetColumns(pf); !slices.Equal(names, header) {
		t.Errorf("columns %q, header %q", names, header)
	}

	for header, want := range map[string]string{
		"cell,\",0\"\n":  `records.csv:1: column 2: ",0" holds a comma`,
		"cell,-\n":       `records.csv:1: column 2: a column named "-"`,
		"cell,,seq\n":    `records.csv:1: column 2: a column needs a name`,
		"cell,seq,seq\n": `records.csv:1: columns 2 and 3 are both named "seq"`,
		"cell,x,y,x,z\n": `columns 2 and 4 are both named "x"`,
	} {
		if err := os.WriteFile(filepath.Join(dir, RecordsFile), []byte(header+"c1,1,2,3,4\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := WriteCellParquet(dir, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("header %q: %v, want an error with %q", header, err, want)
		}
	}

	summary := filepath.Join(dir, SummaryJSON)
	if err := os.WriteFile(summary, []byte(`[{"cell": "c1", "x_ms": 1}, {"cell": "c2", ",0": 2}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSummaries(summary, nil); err == nil || !strings.Contains(err.Error(), "row 2") || !strings.Contains(err.Error(), `",0" holds a comma`) {
		t.Errorf("summary with a metric \",0\": %v", err)
	}
}
