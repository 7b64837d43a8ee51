package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tlab/internal/testbed/tbtest"
)

// dataPython finds a Python with pandas, polars and DuckDB: $TLAB_PYTHON,
// the project's .venv that scripts/setup makes, or python3 on PATH. On CI
// (where scripts/setup ran) a missing one fails the test; elsewhere it is
// skipped, saying how to install them.
func dataPython(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("TLAB_PYTHON"), "../../.venv/bin/python"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if p != "" && exec.Command(p, "-c", "import duckdb, pandas, polars, pyarrow").Run() == nil {
			return p
		}
	}
	const how = "no Python with duckdb, pandas, polars and pyarrow: scripts/setup installs them into .venv (or set TLAB_PYTHON)"
	if os.Getenv("CI") != "" {
		t.Fatal(how)
	}
	t.Skip("SKIP: " + how)
	return ""
}

// TestRunDirectoryLoadsTyped: a real run directory loads with its types
// in the users' own readers, pandas, polars and DuckDB
// (testdata/load_typed.py): no CSV or JSON column is text because of a
// value that is a number; counts, doubles, booleans and the seed are typed
// so in each file, Parquet by tlab's declaration also where no row has a
// value; and the p99 DuckDB computes over the records marked in_summary is
// the summary's.
func TestRunDirectoryLoadsTyped(t *testing.T) {
	tbtest.RequirePrivileges(t)
	python := dataPython(t)
	dir := filepath.Join(t.TempDir(), "run")
	// Thirty requests: too few for the p95's upper confidence bound, so
	// that column has no value in any row.
	code, _, errs := run("run", "--protocols", "tcp,quic", "--profile", "ethernet", "--count", "30", "--interval", "5ms",
		"--warmup", "50ms", "--quality", "off", "--no-calibration", "--no-report", "--out", dir)
	if code != exitOK {
		t.Fatalf("tlab run: exit %d: %s", code, errs)
	}
	out, err := exec.Command(python, "testdata/load_typed.py", dir).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Errorf("the run directory does not load typed: %v", err)
	}
}
