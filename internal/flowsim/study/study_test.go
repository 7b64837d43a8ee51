package study

import (
	"context"
	"testing"

	"tlab/internal/flowsim"
)

// TestGainMapHoldsTheScenariosOwnLink: the study's 149.4 ms is not on the
// map's grid, and the map must still show the scenario's own point.
func TestGainMapHoldsTheScenariosOwnLink(t *testing.T) {
	cfg := flowsim.Scenarios()["small-buffer"][0]
	cfg.BytesPerStream = 64 << 10 // the map's shape, not its figures, is under test
	res, err := FlowStudy{Configs: []flowsim.Config{cfg}, Allowances: []flowsim.Allowance{flowsim.Static{}}, Map: true}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.MapLink.RTT != flowsim.StudyRTT {
		t.Fatalf("map link %v, want the study's %v", res.MapLink.RTT, flowsim.StudyRTT)
	}
	found := 0
	for _, p := range res.Map {
		if p.RTT == res.MapLink.RTT && p.RateBps == res.MapLink.RateBps {
			found++
		}
	}
	if found != 1 || len(res.Map) != len(flowsim.MapRates)*(len(flowsim.MapRTTs)+1) {
		t.Errorf("the scenario's link appears %d times in a map of %d points", found, len(res.Map))
	}
}
