package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/emu"
	"tlab/internal/testbed/tbtest"
)

func TestMain(m *testing.M) { tbtest.Main(m) }

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitCodesAndHelp(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string // in stdout+stderr
	}{
		{[]string{"--help"}, exitOK, "Commands:"},
		{[]string{"bogus"}, exitUsage, `unknown command "bogus"`},
		{[]string{"calibrate", "--nope"}, exitUsage, "flag provided but not defined"},
		{[]string{"calibrate", "--mode", "lazy"}, exitUsage, "want sleep or busy"},
		{[]string{"calibrate", "--help"}, exitOK, "-json"},
		{[]string{"profiles", "wfi"}, exitUsage, "built-in profiles are"},
		{[]string{"profiles", "wifi", "--link", "rate"}, exitUsage, "want key=value"},
		{[]string{"profiles", "wifi", "--link", "up.rate=5Mbit"}, exitOK, "rate 5Mbit"},
		{[]string{"version", "extra"}, exitUsage, "unexpected argument"},
	}
	for _, c := range cases {
		code, out, errs := run(c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("tlab %v: exit %d, output %q; want exit %d and %q", c.args, code, out+errs, c.code, c.want)
		}
	}
}

func TestProfilesJSON(t *testing.T) {
	code, out, _ := run("profiles", "--json")
	if code != exitOK {
		t.Fatal(code)
	}
	var ps []emu.Profile
	if err := json.Unmarshal([]byte(out), &ps); err != nil || len(ps) < 9 {
		t.Fatalf("profiles --json: %v, %d profiles", err, len(ps))
	}
}

func TestCleanupJSONOnEmptyRegistry(t *testing.T) {
	code, out, _ := run("cleanup", "--dry-run", "--json")
	if code != exitOK || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("cleanup --json: exit %d, %q", code, out)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func TestFlowsimCommand(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run("flowsim", "--scenario", "small-buffer", "--json", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 4 {
		t.Fatalf("--json: %v, %d rows", err, len(rows))
	}
	for _, k := range []string{"allowance", "throughput_mbps", "completion_s", "window_updates", "max_stream_window_bytes"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	for _, f := range []string{"summary.json", "series-static.csv", "series-fast-autotuning.csv", "received-over-time.svg", "received-over-time.png", "window-over-time.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	// Deterministic: the same inputs give byte-identical outputs.
	_, again, _ := run("flowsim", "--scenario", "small-buffer", "--json")
	if again != out {
		t.Error("flowsim output differs between two identical runs")
	}
	if code, _, _ := run("flowsim", "--scenario", "huge"); code != exitUsage {
		t.Errorf("unknown scenario: exit %d", code)
	}
}
