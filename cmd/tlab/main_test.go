package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/emu"
	"tlab/internal/flowsim"
	"tlab/internal/testbed/tbtest"
)

func TestMain(m *testing.M) { tbtest.Main(m, removeBuiltTlab) }

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
		{[]string{"calibrate", "--nope"}, exitUsage, "unknown flag --nope"},
		{[]string{"calibrate", "--mode", "lazy"}, exitUsage, "want busy, sleep or adaptive"},
		{[]string{"calibrate", "--engine", "turbo"}, exitUsage, `engine "turbo": want ring or mmsg`},
		{[]string{"calibrate", "--rounds", "4"}, exitUsage, "with --compare-engines"},
		{[]string{"calibrate", "--compare-engines", "--rounds", "1"}, exitUsage, "want 2 or more"},
		{[]string{"calibrate", "--help"}, exitOK, "-json"},
		{[]string{"profiles", "wfi"}, exitUsage, "built-in profiles are"},
		// Two output formats at once: refused, not one silently chosen.
		{[]string{"metrics", "--json", "--markdown"}, exitUsage, "--json or --markdown, not both"},
		{[]string{"profiles", "wifi", "--link", "rate"}, exitUsage, "want key=value"},
		{[]string{"profiles", "wifi", "--link", "up.rate=5Mbit"}, exitOK, "rate 5Mbit"},
		{[]string{"version", "extra"}, exitUsage, "unexpected argument"},
		// repetitions: auto from 2 to 6: 2 profiles x 4 protocols x 2 = 16
		// cells at first, x 6 = 48 at the most.
		{[]string{"validate", "quick"}, exitOK, "16 to 48 cells (2 profiles x 4 protocols x 1 matrix point x 2 to 6 repetitions, repeated until decided)"},
		{[]string{"run", "--replay", "x.yaml"}, exitUsage, "goes with --remote"},
		{[]string{"run", "--remote", "nohost", "quick"}, exitUsage, "want HOST:PORT"},
		{[]string{"run", "--remote", "h:1", "--replay", "x.yaml", "--link", "up.loss=1%"}, exitUsage, "run the two apart"},
		{[]string{"record", "--remote", "h:1"}, exitUsage, "give --remote HOST:PORT and --out"},
		{[]string{"agent", "--bogus"}, exitUsage, "unknown flag --bogus"},
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
	for _, f := range []string{"summary.json", "series-static.csv", "series-fast-autotuning.csv", "received-over-time.svg", "received-over-time.png", "window-over-time.png", "report.html"} {
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

// TestFlowsimRunsTheStudysLinkAndFirstUpdateRules: with no link flags,
// static moves the study's 234.56 kbit/s in scenario 1 (the link is
// derived from it), and one table compares autotuning's first-update rules.
func TestFlowsimRunsTheStudysLinkAndFirstUpdateRules(t *testing.T) {
	code, out, errs := run("flowsim", "--scenario", "small-buffer", "--allowances", "static,autotuning,autotuning@first-read", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []flowsim.Result
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("--json: %v, %d rows", err, len(rows))
	}
	if got := rows[0].ThroughputMbps * 1000; math.Abs(got-234.56)/234.56 > 0.01 {
		t.Errorf("static on the default link: %.2f kbit/s, the study's is 234.56", got)
	}
	if rows[1].Allowance != "autotuning" || rows[2].Allowance != "autotuning@first-read" {
		t.Errorf("allowances %q, %q", rows[1].Allowance, rows[2].Allowance)
	}
	if code, _, errs := run("flowsim", "--allowances", "static@hold"); code != exitUsage || !strings.Contains(errs, "only autotuning and fast-autotuning") {
		t.Errorf("static@hold: exit %d, %q", code, errs)
	}
}

// TestFlowsimReal measures quic-go through the emulated link beside the
// simulator: both settings appear from both sources, the measured ones
// carry every byte, and the qlog files, per-stream CSV and comparison
// plots are written.
func TestFlowsimReal(t *testing.T) {
	tbtest.RequirePrivileges(t)
	dir := t.TempDir()
	// At 20 ms: the study's 149.4 ms link makes a static transfer last a minute.
	code, out, errs := run("flowsim", "--scenario", "small-buffer", "--allowances", "static", "--real", "--rtt", "20ms", "--json", "--out", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []flowsim.Result
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]flowsim.Result{}
	for _, r := range rows {
		got[r.Source+"/"+r.Allowance] = r
	}
	for _, k := range []string{"simulator/static", "simulator/quic-go static", "simulator/quic-go autotuning", "quic-go/quic-go static", "quic-go/quic-go autotuning"} {
		r, ok := got[k]
		if !ok {
			t.Fatalf("no %s row in %d rows", k, len(rows))
		}
		if r.ThroughputMbps <= 0 || r.BytesTotal != 2<<20 {
			t.Errorf("%s: %.2f Mbit/s over %d bytes", k, r.ThroughputMbps, r.BytesTotal)
		}
	}
	// The model should predict quic-go within a factor of two; it is
	// usually within 10 % (docs/flowsim.md).
	for _, s := range []string{"quic-go static", "quic-go autotuning"} {
		sim, real := got["simulator/"+s].ThroughputMbps, got["quic-go/"+s].ThroughputMbps
		if real < sim/2 || real > sim*2 {
			t.Errorf("%s: measured %.2f Mbit/s, the simulator predicted %.2f", s, real, sim)
		}
	}
	for _, pattern := range []string{"qlog/*static*/*_client.sqlog", "qlog/*autotuning*/*_server.sqlog", "quic-go-received-over-time.svg", "quic-go-window-over-time.png", "series-quic-go-static-measured.csv"} {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) != 1 {
			t.Errorf("%s: %d files", pattern, len(m))
		}
	}
	streams, err := os.ReadFile(filepath.Join(dir, "streams.csv"))
	if err != nil || strings.Count(string(streams), "\n") != 5 {
		t.Errorf("streams.csv: %v\n%s", err, streams)
	}
	if code, _, _ := run("flowsim", "--real", "--no-cc"); code != exitUsage {
		t.Errorf("--real with --no-cc: exit %d", code)
	}
}
