package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"tlab/internal/testbed/tbtest"
)

// TestUnknownFlagSuggestsAndStaysShort: a mistyped flag gets its one-line
// error, the nearest flag's name (edit distance: --protocol is one
// deletion from --protocols) and where the full list is, not the whole
// usage (88 lines for run).
func TestUnknownFlagSuggestsAndStaysShort(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--protocol", "tcp"}, "did you mean --protocols?"},
		{[]string{"run", "--proflie", "5g"}, "did you mean --profile?"},
		{[]string{"calibrate", "--quik"}, "did you mean --quick?"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"presest"}, "did you mean presets?"},
	} {
		code, out, errs := run(c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("tlab %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
		if n := strings.Count(errs, "\n"); n > 3 || out != "" {
			t.Errorf("tlab %s: %d lines of error (want at most 3), stdout %q:\n%s", strings.Join(c.args, " "), n, out, errs)
		}
		if !strings.Contains(errs, "--help") && !strings.Contains(errs, "list of commands") {
			t.Errorf("tlab %s: no pointer to the help:\n%s", strings.Join(c.args, " "), errs)
		}
	}
	// A name far from every flag gets no guess.
	if _, _, errs := run("run", "--zzzzzzzz"); strings.Contains(errs, "did you mean") {
		t.Errorf("tlab run --zzzzzzzz guessed: %s", errs)
	}
}

// TestBadInputExitsTwo: the README says 2 is bad flags or input; an
// address that is not one and a protocol crosscheck has no real client
// for are input, refused before anything runs.
func TestBadInputExitsTwo(t *testing.T) {
	for _, args := range [][]string{
		{"agent", "--listen", "nope", "--state", t.TempDir(), "--no-token"},
		{"crosscheck", "--protocols", "h4"},
		{"crosscheck", "--protocols", "tcp"},
	} {
		if code, _, errs := run(args...); code != exitUsage {
			t.Errorf("tlab %s: exit %d, want 2: %s", strings.Join(args, " "), code, errs)
		}
	}
}

// TestRunRequireExitsOneWhenNothingMeetsIt: as tlab advise and tlab
// compare, tlab run --require exits 1 when no stack meets the
// requirements on every network, 0 when one does. No request on an
// emulated ethernet comes back within 1 µs (the link's own base RTT is
// larger) and every one within 10 s.
func TestRunRequireExitsOneWhenNothingMeetsIt(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	for _, c := range []struct {
		bound string
		code  int
	}{{"delay_p99_ms<=0.001", exitFailure}, {"delay_p99_ms<=10000", exitOK}} {
		cmd := exec.Command(bin, "run", "--protocols", "tcp", "--profile", "ethernet", "--count", "10", "--interval", "10ms",
			"--warmup", "0s", "--quality", "off", "--require", c.bound)
		cmd.Env = append(os.Environ(), "TLAB_NO_PROGRESS=1")
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code {
			t.Errorf("--require %s: exit %d, want %d:\n%s", c.bound, code, c.code, out)
		}
	}
}
