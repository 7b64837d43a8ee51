package scenario

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLinksResolvedOncePerPoint: a scenario of P = 3 profiles, a matrix
// of M = 2 points, 2 protocols and 2 repetitions has P x M x 2 x 2 = 24
// cells. Its links are resolved when it is read (P) and when each
// point's scenario is read (M x P, that point's link overrides applied),
// and never again: not per profile's cells, not by the plan's estimate
// nor by the cell's spec (TestbedTopology, called twice per cell here as
// they do). P + M x P = 3 + 6 = 9 resolutions for 24 cells. (Before the
// plan shared them, every profile re-read each point's scenario and each
// estimate and spec resolved again: 3 + 6 x 3 + 24 x 2 = 69.)
func TestLinksResolvedOncePerPoint(t *testing.T) {
	s, err := Parse("r.yaml", []byte("name: r\nprofiles: [ethernet, 5g, lte]\nprotocols: [tcp, quic]\nrepetitions: 2\n"+
		"workload: {type: periodic}\nduration: 1s\nmatrix: {link.loss: [0%, 1%]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells, points, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 24 {
		t.Fatalf("%d cells, want 3 x 2 x 2 x 2 = 24", len(cells))
	}
	seen := map[*Scenario]bool{}
	for _, c := range cells {
		for range 2 {
			if _, err := points[c.Point].TestbedTopology(c.Profile); err != nil {
				t.Fatal(err)
			}
		}
		seen[points[c.Point]] = true
	}
	n := s.resolved
	for p := range seen {
		n += p.resolved
	}
	if len(seen) != 2 || n != 9 {
		t.Errorf("%d resolutions over %d points' scenarios, want 9 over 2", n, len(seen))
	}
	// Each point keeps its own link: the swept loss.
	for _, c := range cells {
		link, _ := points[c.Point].LinkFor(c.Profile)
		want := map[string]float64{"0%": 0, "1%": 0.01}[c.Params[0].Value]
		if got := float64(link.Up.Loss.Rate); got != want {
			t.Errorf("%s: up loss %v, want %v", c.ID, got, want)
		}
	}
}

// TestTraceReadOncePerScenario: a profile replaying a trace, on every
// point of a three-point matrix, reads the trace file once for the
// scenario and all its points' scenarios (not once per point and per
// profile).
func TestTraceReadOncePerScenario(t *testing.T) {
	dir := t.TempDir()
	trace, prof := filepath.Join(dir, "tr.txt"), filepath.Join(dir, "tr.yaml")
	if err := os.WriteFile(trace, []byte("1\n2\n3\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prof, []byte("name: tr\ntrace: "+trace+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Parse("t.yaml", []byte("name: t\nprofiles: ["+prof+", 5g]\nprotocols: [tcp]\nworkload: {type: periodic}\nduration: 1s\n"+
		"matrix: {workload.interval: [5ms, 10ms, 20ms]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells, points, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	caches := map[*traceRates]bool{s.traces: true}
	for _, c := range cells {
		caches[points[c.Point].traces] = true
	}
	reads := 0
	for c := range caches {
		reads += c.reads
	}
	if reads != 1 {
		t.Errorf("the trace was read %d times, want once", reads)
	}
}
