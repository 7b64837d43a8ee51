package results

import "testing"

// TestPlotSpecFixesSweptValues: a study's figure is drawn at its own fixed
// values (study A's Fig. 1 at d = 25 ms, Fig. 2 at p = 256 and d = 25,
// ../shared/docs/studies.md): "jitter_bars@workload.interval=25ms&
// workload.payload=256" keeps the rows swept at both values only.
func TestPlotSpecFixesSweptValues(t *testing.T) {
	p, err := ParsePlotSpec("jitter_bars@workload.interval=25ms&workload.payload=256")
	if err != nil || p.Kind != "jitter_bars" || len(p.Fixed) != 2 {
		t.Fatalf("%+v, %v", p, err)
	}
	row := func(d, size string) Summary {
		return Summary{Params: []Param{{Key: "workload.interval", Value: d}, {Key: "workload.payload", Value: size}}}
	}
	for _, c := range []struct {
		r    Summary
		want bool
	}{{row("25ms", "256"), true}, {row("25ms", "128"), false}, {row("5ms", "256"), false}} {
		if got := p.Keeps(c.r); got != c.want {
			t.Errorf("%v: keeps %v, want %v", c.r.Params, got, c.want)
		}
	}
	if whole, _ := ParsePlotSpec("delay_box"); whole.Kind != "delay_box" || len(whole.Fixed) != 0 || !whole.Keeps(row("5ms", "128")) {
		t.Errorf("a plain kind: %+v", whole)
	}
	for _, bad := range []string{"delay_box@", "delay_box@workload.interval", "delay_box@=25ms", "@workload.interval=25ms"} {
		if _, err := ParsePlotSpec(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
