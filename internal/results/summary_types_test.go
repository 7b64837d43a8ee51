package results

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestSummaryJSONKeepsNumbersNumbers: a percentile beyond any bound was
// written as the string "inf", so a JSON reader typed the whole column as
// text (polars, DuckDB). It is written as the largest double,
// 1.7976931348623157e308 (IEEE 754 binary64's largest finite value,
// (2 − 2^−52) × 2^1023), a number every reader types as one, larger than
// any measured value (sorts and compares like infinity), and tlab reads it
// back as +Inf; -Inf as its negative.
func TestSummaryJSONKeepsNumbersNumbers(t *testing.T) {
	dir := t.TempDir()
	rows := sampleRows()
	rows[0].Set("delay_p99_ms", math.Inf(1))
	rows[1].Set("delay_p99_ms", math.Inf(-1))
	if err := WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryJSON))
	if err != nil {
		t.Fatal(err)
	}
	var plain []map[string]any
	if err := json.Unmarshal(b, &plain); err != nil {
		t.Fatal(err)
	}
	const largest = 1.7976931348623157e308
	if v, ok := plain[0]["delay_p99_ms"].(float64); !ok || v != largest {
		t.Errorf("+Inf is written as %#v, want the number %v", plain[0]["delay_p99_ms"], largest)
	}
	if v, ok := plain[1]["delay_p99_ms"].(float64); !ok || v != -largest {
		t.Errorf("-Inf is written as %#v, want the number %v", plain[1]["delay_p99_ms"], -largest)
	}
	back, err := ReadSummaries(filepath.Join(dir, SummaryJSON), []string{"workload.interval", "settings.tls_version"})
	if err != nil {
		t.Fatal(err)
	}
	if v := back[0].Float("delay_p99_ms"); !math.IsInf(v, 1) {
		t.Errorf("read back %v, want +Inf", v)
	}
	if v := back[1].Float("delay_p99_ms"); !math.IsInf(v, -1) {
		t.Errorf("read back %v, want -Inf", v)
	}
	// Directories written before kept "inf": still read as infinity.
	old := strings.Replace(string(b), "1.7976931348623157e+308", `"inf"`, 1)
	if old == string(b) {
		t.Fatalf("no sentinel to replace in %s", b)
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryJSON), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err = ReadSummaries(filepath.Join(dir, SummaryJSON), []string{"workload.interval", "settings.tls_version"})
	if err != nil || !math.IsInf(back[0].Float("delay_p99_ms"), 1) {
		t.Errorf("an old \"inf\" reads back as %v (%v), want +Inf", back[0].Float("delay_p99_ms"), err)
	}
}

// TestSummaryJSONLoadsTypedInPython: the users' own readers type the
// column as a float: Python's json always, pandas and DuckDB when
// installed ($TLAB_PYTHON names an interpreter that has them).
func TestSummaryJSONLoadsTypedInPython(t *testing.T) {
	python := os.Getenv("TLAB_PYTHON")
	if python == "" {
		var err error
		if python, err = exec.LookPath("python3"); err != nil {
			t.Skip("SKIP: no python3 on PATH (set TLAB_PYTHON)")
		}
	}
	dir := t.TempDir()
	rows := sampleRows()
	rows[0].Set("delay_p99_ms", math.Inf(1))
	rows[1].Set("delay_p99_ms", 4.5)
	if err := WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	script := `
import json, sys
path = sys.argv[1]
rows = json.load(open(path))
assert all(isinstance(r["delay_p99_ms"], float) for r in rows), [r["delay_p99_ms"] for r in rows]
assert rows[0]["delay_p99_ms"] >= 1e308 and rows[1]["delay_p99_ms"] == 4.5
print("json: float")
try:
    import pandas
except ImportError:
    print("SKIP pandas: not installed")
else:
    df = pandas.read_json(path)
    assert str(df["delay_p99_ms"].dtype) == "float64", df.dtypes
    assert df["delay_p99_ms"][0] >= 1e308
    print("pandas: float64")
try:
    import duckdb
except ImportError:
    print("SKIP duckdb: not installed")
else:
    con = duckdb.connect()
    typ = con.execute("SELECT typeof(delay_p99_ms) FROM read_json_auto(?) LIMIT 1", [path]).fetchone()[0]
    assert typ == "DOUBLE", typ
    print("duckdb: DOUBLE")
`
	out, err := exec.Command(python, "-c", script, filepath.Join(dir, SummaryJSON)).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Errorf("python: %v\n%s", err, out)
	}
}

// parquetDoubles reads a double column of a Parquet file, null as NaN.
func parquetDoubles(t *testing.T, pf *parquet.File, column string) []float64 {
	t.Helper()
	col, ok := pf.Schema().Lookup(column)
	if !ok {
		t.Fatalf("no column %s", column)
	}
	var out []float64
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, rg.NumRows())
		n, err := rows.ReadRows(buf)
		rows.Close()
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		for _, r := range buf[:n] {
			v := r[col.ColumnIndex]
			if v.IsNull() {
				out = append(out, math.NaN())
			} else {
				out = append(out, v.Double())
			}
		}
	}
	return out
}

// TestSummaryParquetTypesDeclaredColumns: a count is an integer in
// summary.parquet, not a double; a metric no row could measure (every
// value NaN) is still a double, not text; a setting the protocol does not
// have ("") is null, so that a column of booleans stays boolean (it was
// text, false beside ""), in summary.json too.
func TestSummaryParquetTypesDeclaredColumns(t *testing.T) {
	dir := t.TempDir()
	rows := sampleRows()
	rows[0].Set("delay_p95_ci_high_ms", math.NaN())
	rows[1].Set("delay_p95_ci_high_ms", math.NaN())
	rows[0].Set("tcp_ecn", false)
	rows[1].Set("tcp_ecn", "")
	types := func(c string) ColumnType {
		switch c {
		case "requests":
			return Integer
		case "delay_p95_ci_high_ms", "delay_p50_ms":
			return Number
		}
		return Inferred
	}
	if err := WriteTypedSummaries(dir, rows, types); err != nil {
		t.Fatal(err)
	}
	pf, err := openParquet(t, filepath.Join(dir, SummaryParquet))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]parquet.Kind{}
	for _, c := range pf.Schema().Fields() {
		kinds[c.Name()] = c.Type().Kind()
	}
	for col, want := range map[string]parquet.Kind{"requests": parquet.Int64, "delay_p95_ci_high_ms": parquet.Double,
		"delay_p50_ms": parquet.Double, "tcp_ecn": parquet.Boolean, "resumption": parquet.Boolean, "tls_version": parquet.ByteArray} {
		if kinds[col] != want {
			t.Errorf("summary.parquet's %s is %v, want %v", col, kinds[col], want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, SummaryJSON))
	if err != nil {
		t.Fatal(err)
	}
	var plain []map[string]any
	if err := json.Unmarshal(b, &plain); err != nil {
		t.Fatal(err)
	}
	if v, ok := plain[1]["tcp_ecn"]; !ok || v != nil {
		t.Errorf("summary.json's tcp_ecn for a protocol without it is %#v, want null", v)
	}
}
