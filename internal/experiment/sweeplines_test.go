package experiment

import (
	"slices"
	"strings"
	"testing"

	"tlab/internal/testbed"
)

// A refused record is something the sweep did not act on: it must read as
// a warning, never as a run cleaned up after.
func TestSweepLinesSayRefusedRecordsWereNotRemoved(t *testing.T) {
	refused := []testbed.CleanupAction{
		{Run: "1234.json", What: "refused record /run/tlab/1234.json", Error: "owned by uid 65534, not 0"},
	}
	lines := sweepLines(refused)
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "warning: ") {
		t.Fatalf("a refused record should give one warning, got %q", lines)
	}
	for _, l := range lines {
		if strings.Contains(l, "removed") {
			t.Errorf("a refused record is reported as removed: %q", l)
		}
	}
}

func TestSweepLinesCountRunsCleanedUpAfter(t *testing.T) {
	actions := []testbed.CleanupAction{
		{Run: "a", What: "remove /tmp/tlab-a", Done: true},
		{Run: "a", What: "remove record", Done: true},
		{Run: "b", What: "remove /tmp/tlab-b", Done: true},
		{Run: "c", What: "kill 42", Done: true},
		{Run: "c", What: "remove /tmp/tlab-c", Error: "permission denied"},
		// Not done and no error: a step left alone (Reason says why).
		{Run: "d", What: "kill 77", Reason: "its start time differs: another process"},
	}
	lines := sweepLines(actions)
	// Runs a and b were cleaned up after; c failed part way and is a
	// warning; nothing was done for d.
	want := []string{
		"warning: cleaning up after run c: remove /tmp/tlab-c: permission denied",
		"removed what 2 killed tlab runs left behind (temp files, their records)",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("got %q, want %q", lines, want)
	}
}
