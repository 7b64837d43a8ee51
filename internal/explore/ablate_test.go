package explore

import (
	"context"
	"strings"
	"testing"
)

// jitterLab is the flip of TestAKnownFlipIsLocatedWithFewPoints made by
// jitter: with link.jitter=0ms among a point's settings quic is 5 ms
// faster everywhere (no flip); link.loss=0% changes nothing.
type jitterLab struct{ fakeLab }

func (j *jitterLab) Measure(ctx context.Context, reqs []Request) ([]Outcome, error) {
	outs, err := j.fakeLab.Measure(ctx, reqs)
	for i, r := range reqs {
		for _, s := range r.Point.Settings {
			if s.Path == "link.jitter" && s.Value == "0ms" {
				outs[i].Values["quic"]["delay_p99_ms"] = outs[i].Values["tcp"]["delay_p99_ms"] - 5
			}
		}
	}
	return outs, err
}

// Removing the impairment the flip needs moves the boundary; removing one
// it does not need leaves it.
func TestAblationSaysWhichRemovalMovesTheBoundary(t *testing.T) {
	lab := &jitterLab{fakeLab{seed: 2, shared: 2, own: 0.3, delay: func(st string, x []float64) float64 {
		if st == "quic" {
			return 30 - 2.5*(x[0]-1.8)
		}
		return 30 + 2.5*(x[0]-1.8)
	}}}
	cfg := Config{Params: []Param{lossRange}, Stacks: []string{"quic", "tcp"}, Require: require(1000), MaxReps: 10}
	m, err := Run(context.Background(), cfg, lab)
	if err != nil {
		t.Fatal(err)
	}
	pair := pairOf(m)
	var b *Boundary
	for i := range m.Boundaries {
		if m.Boundaries[i].Comparison == pair {
			b = &m.Boundaries[i]
		}
	}
	if b == nil {
		t.Fatalf("no boundary:\n%s", m.Answer())
	}
	abl := []Ablation{
		{Name: "no jitter", Settings: []Setting{{Path: "link.jitter", Value: "0ms"}}},
		{Name: "no loss", Settings: []Setting{{Path: "link.loss", Value: "0%"}}}, // explored: skipped
		{Name: "no queue", Settings: []Setting{{Path: "link.queue_packets", Value: "100000"}}},
	}
	res, err := Ablate(context.Background(), m, *b, cfg, abl, lab)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d results, want 2 (no loss sets the explored parameter)", len(res))
	}
	if !res[0].Moves || res[0].Below.Label != "quic" || res[0].Above.Label != "quic" {
		t.Errorf("no jitter: moves %v, %s below, %s above; want the boundary gone, quic on both sides: %s", res[0].Moves, res[0].Below.Label, res[0].Above.Label, res[0].Says)
	}
	if res[1].Moves || !strings.Contains(res[1].Says, "not its cause") {
		t.Errorf("no queue: %s; want the flip to stay", res[1].Says)
	}
}
