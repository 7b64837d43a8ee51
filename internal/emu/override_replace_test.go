package emu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnOverrideReplacesWhatItContradicts: 5g's down direction has a
// 300 Mbit/s rate; --link down.trace=FILE gives it a trace instead (a
// trace sets the rate), and --link down.rate=50Mbit on a trace gives it
// the rate back. Both in one overlay are still refused.
func TestAnOverrideReplacesWhatItContradicts(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "flat.trace")
	// mahimahi: one line per 1500-byte opportunity, in ms: 1 per ms is
	// 12 Mbit/s.
	if err := os.WriteFile(trace, []byte("1\n2\n3\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ov, err := ParseOverrides("down.trace=" + trace)
	if err != nil {
		t.Fatal(err)
	}
	link, _, err := ResolveLink("5g", ov)
	if err != nil {
		t.Fatalf("5g with down.trace: %v", err)
	}
	if link.Down.Trace != trace || link.Down.Rate != 0 || link.Up.Rate.BitsPerSecond() != 60e6 {
		t.Errorf("down: trace %q rate %v; up rate %v; want the trace alone down, 60 Mbit/s up", link.Down.Trace, link.Down.Rate, link.Up.Rate)
	}
	// And a rate laid over the trace takes its place.
	rate, err := ParseOverrides("down.rate=50Mbit")
	if err != nil {
		t.Fatal(err)
	}
	if err := ApplyOverlay("--link", rate, &link); err != nil {
		t.Fatalf("a rate over the trace: %v", err)
	}
	if link.Down.Trace != "" || link.Down.Rate.BitsPerSecond() != 50e6 {
		t.Errorf("a rate over the trace: trace %q rate %v; want 50 Mbit/s alone", link.Down.Trace, link.Down.Rate)
	}
	back, err := ParseOverrides("down.trace=" + trace + ",down.rate=50Mbit")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ResolveLink("5g", back); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Errorf("a rate and a trace in one override: %v, want refused as exclusive", err)
	}
}
