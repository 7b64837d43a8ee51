package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"tlab/internal/cellrun"
	"unicode/utf8"
)

// progressExample is cell 3 of 12, halfway through its 30 s: (12-3)·30 s
// + 30 s − 15 s = 285 s = 4m45s left.
var progressExample = cellrun.Progress{Cell: 3, Cells: 12, Protocol: "quic", Profile: "5g-cband",
	Elapsed: 15 * time.Second, Planned: 30 * time.Second, Records: 1234, LastDelayMs: 3.21}

// TestProgressLineFitsTheTerminal: each line is written out by hand from
// its parts. Full, it is 94 columns: "[3/12]" (6), the name padded to 22,
// the 22-column bar, "15s/30s", "1234 rec", "last 3.21 ms", "~4m45s left",
// with a space between each. At 80 columns (79 usable) the record count
// and then the last delay go (85, then 72 columns); at 40 the bar goes and
// the name is cut to what is left.
func TestProgressLineFitsTheTerminal(t *testing.T) {
	cases := []struct {
		width int
		want  string
	}{
		{120, "[3/12] quic / 5g-cband        [##########..........] 15s/30s 1234 rec last 3.21 ms ~4m45s left"},
		{80, "[3/12] quic / 5g-cband        [##########..........] 15s/30s ~4m45s left"},
		{40, "[3/12] quic / 5g-c~ 15s/30s ~4m45s left"},
	}
	for _, c := range cases {
		if got := progressLine(progressExample, c.width); got != c.want {
			t.Errorf("width %d:\n got %q\nwant %q", c.width, got, c.want)
		}
	}
	for width := 1; width <= 200; width++ {
		if got := progressLine(progressExample, width); utf8.RuneCountInString(got) > max(width-1, 1) {
			t.Errorf("width %d: %d columns: %q", width, utf8.RuneCountInString(got), got)
		}
	}
}

// TestProgressRedrawsInPlaceAt80Columns redraws the line 40 times in a
// real terminal (tmux, 80 columns), as a run does four times a second,
// and reads the screen: one line, not one left behind per redraw.
func TestProgressRedrawsInPlaceAt80Columns(t *testing.T) {
	if os.Getenv("TLAB_PROGRESS_HELPER") == "1" {
		show := progressPrinter(os.Stdout)
		for i := range 40 {
			p := progressExample
			p.Elapsed = time.Duration(i) * time.Second / 2
			p.Profile = "5g-cband+loss-ge-b+long-profile-name"
			show(p)
		}
		os.Stdout.WriteString("\ndone\n")
		time.Sleep(30 * time.Second) // the test reads the screen, then kills the session
		return
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("no tmux (scripts/setup --tests installs it)")
	}
	session := "tlab-progress-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	socket := t.TempDir() + "/tmux"
	tmux := func(args ...string) ([]byte, error) {
		return exec.Command("tmux", append([]string{"-S", socket}, args...)...).CombinedOutput()
	}
	t.Cleanup(func() { tmux("kill-server") })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "24",
		"env", "TLAB_PROGRESS_HELPER=1", self, "-test.run=^TestProgressRedrawsInPlaceAt80Columns$"); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	var screen string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, err := tmux("capture-pane", "-p", "-t", session)
		if err != nil {
			t.Fatalf("capture-pane: %v\n%s", err, out)
		}
		if screen = string(out); strings.Contains(screen, "done") {
			break
		}
	}
	var lines []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "[3/12] quic / 5g-cband+loss") || lines[1] != "done" {
		t.Errorf("the screen after 40 redraws at 80 columns, want the last line and done:\n%s", screen)
	}
}
