package report

import (
	"context"
	"strings"
	"testing"

	"tlab/internal/advise"
	"tlab/internal/explore"
)

// plane is a fake lab: quic's delay falls below tcp's above 2 % loss,
// whatever the RTT, with no noise.
type plane struct{}

func (plane) Measure(_ context.Context, reqs []explore.Request) ([]explore.Outcome, error) {
	var out []explore.Outcome
	for _, r := range reqs {
		x := r.Point.Values[0]
		out = append(out, explore.Outcome{Request: r, Values: map[string]map[string]float64{
			"quic": {"delay_p99_ms": 30 - 3*(x-2) + 0.01*float64(r.Rep)},
			"tcp":  {"delay_p99_ms": 30 + 3*(x-2) - 0.01*float64(r.Rep)},
		}})
	}
	return out, nil
}

// The map is drawn from the files an exploration writes: a strip over
// one parameter, a decision map over two, each with the boundaries'
// intervals.
func TestExploreMapDrawsStripAndPlane(t *testing.T) {
	loss := explore.Param{Path: "link.loss", Low: 0, High: 5, Unit: "%"}
	rtt := explore.Param{Path: "link.rtt", Low: 5, High: 300, Unit: "ms", Log: true}
	for _, params := range [][]explore.Param{{loss}, {loss, rtt}} {
		dir := t.TempDir()
		cfg := explore.Config{Params: params, Stacks: []string{"quic", "tcp"}, Require: []advise.Requirement{{Metric: "delay_p99_ms", Op: "<=", Bound: 1000}}, MaxPoints: 40}
		m, err := explore.Run(context.Background(), cfg, plane{})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Boundaries) == 0 {
			t.Fatalf("%d parameters: no boundary to draw:\n%s", len(params), m.Answer())
		}
		// The why's line, as tlab explore's ablations would say it,
		// goes under the map.
		const why = "the boundary at link.loss = 2% is loss's: without jitter it stays"
		m.Why = &explore.Explanation{Whys: []explore.Why{{Boundary: m.Boundaries[0], Says: why}}}
		if err := m.WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		figs, err := drawExploreMap(panel{run: &Run{Dir: dir}, dir: dir, profile: "ethernet", stem: "explore_map-1-ethernet"})
		if err != nil {
			t.Fatal(err)
		}
		want := "Where the verdicts change"
		if len(params) == 2 {
			want = "Decision map: quic vs tcp on delay_p99_ms"
		}
		if len(figs) != 1 || !strings.HasPrefix(figs[0].Title, want) || len(figs[0].SVG) == 0 {
			t.Errorf("%d parameters: %d figures, title %q; want one titled %q", len(params), len(figs), figs[0].Title, want)
		}
		if !strings.Contains(figs[0].Caption, why) {
			t.Errorf("%d parameters: the caption lacks the why: %s", len(params), figs[0].Caption)
		}
	}
	// A run that is no exploration draws nothing, without an error.
	if figs, err := drawExploreMap(panel{run: &Run{Dir: t.TempDir()}}); err != nil || len(figs) != 0 {
		t.Errorf("a plain run: %d figures, %v", len(figs), err)
	}
}

// A line explored with monotone inference draws the statuses it inferred,
// not measured, as rings, and says so under the strip; a map without it
// has none.
func TestTheStripShowsInferredStatuses(t *testing.T) {
	loss := explore.Param{Path: "link.loss", Low: 0, High: 5, Unit: "%"}
	for _, mono := range [][]int{nil, {1}} {
		dir := t.TempDir()
		cfg := explore.Config{Params: []explore.Param{loss}, Stacks: []string{"quic", "tcp"}, Require: []advise.Requirement{{Metric: "delay_p99_ms", Op: "<=", Bound: 1000}}, MaxPoints: 40, Monotone: mono}
		m, err := explore.Run(context.Background(), cfg, plane{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		figs, err := drawExploreMap(panel{run: &Run{Dir: dir}, dir: dir, profile: "ethernet", stem: "explore_map-1-ethernet"})
		if err != nil || len(figs) != 1 {
			t.Fatalf("monotone %v: %d figures, %v", mono, len(figs), err)
		}
		says := strings.Contains(figs[0].Caption, "statuses inferred along the monotone axes")
		if says != (mono != nil) {
			t.Errorf("monotone %v: the caption says inferred statuses: %v, want %v: %s", mono, says, mono != nil, figs[0].Caption)
		}
	}
}

// A line whose floor decides some statuses draws them as squares and says
// so under the strip: the floor here is 300 ms above 3 % loss, above the
// bound of 100 ms, so both stacks fail there by construction.
func TestTheStripShowsFloorStatuses(t *testing.T) {
	loss := explore.Param{Path: "link.loss", Low: 0, High: 5, Unit: "%"}
	dir := t.TempDir()
	cfg := explore.Config{Params: []explore.Param{loss}, Stacks: []string{"quic", "tcp"}, Require: []advise.Requirement{{Metric: "delay_p99_ms", Op: "<=", Bound: 100}},
		MaxPoints: 40, Monotone: []int{1},
		Floor: func(p explore.Point, _, _ string) (float64, bool) {
			if p.Values[0] > 3 {
				return 300, true
			}
			return 0, true
		}}
	m, err := explore.Run(context.Background(), cfg, plane{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	figs, err := drawExploreMap(panel{run: &Run{Dir: dir}, dir: dir, profile: "ethernet", stem: "explore_map-1-ethernet"})
	if err != nil || len(figs) != 1 {
		t.Fatalf("%d figures, %v", len(figs), err)
	}
	if !strings.Contains(figs[0].Caption, "decided by construction, by the floor") {
		t.Errorf("the caption does not say what the floor decided: %s", figs[0].Caption)
	}
}
