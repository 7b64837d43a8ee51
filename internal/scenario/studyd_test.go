package scenario

import (
	"fmt"
	"slices"
	"testing"

	"tlab/scenarios"
)

// TestStudyDFig10SweepsTheFrameErrorRate: study D's scenario B sweeps the
// frame error rate with the retries, "50 times for each configuration
// (error rate and retransmission value)", the rates being scenario A's
// loss rates, Table 1: 0, 1, 2, 3, 5 and 10 % (../shared/docs/studies.md,
// study D). So study-d-full-b has every (stations, retries, frame error
// rate) of {3, 5, 8} × {0, 1, 2, 3} × those six rates, 50 repetitions
// each, per protocol: 3 × 4 × 6 × 50 × 3 = 10800 cells, and its rates are
// study-d-full-a's loss rates.
func TestStudyDFig10SweepsTheFrameErrorRate(t *testing.T) {
	// Each cell with its matrix point's scenario.
	type pointCell struct {
		Cell
		point *Scenario
	}
	cellsOf := func(name string) []pointCell {
		t.Helper()
		data, _ := scenarios.Read(name)
		s, err := Parse(name+".yaml", data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cells, points, err := s.Expand()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := make([]pointCell, len(cells))
		for i, c := range cells {
			out[i] = pointCell{c, points[c.Point]}
		}
		return out
	}
	studyRates := []float64{0, 0.01, 0.02, 0.03, 0.05, 0.10}

	// Cells of one matrix point share its scenario: resolve each link once.
	type point struct {
		s       *Scenario
		profile string
	}
	links := map[point][2]float64{} // frame error rate up, loss rate up
	retries := map[point]int{}
	linkOf := func(c pointCell) point {
		p := point{c.point, c.Profile}
		if _, ok := links[p]; !ok {
			link, err := c.point.LinkFor(c.Profile)
			if err != nil {
				t.Fatal(err)
			}
			if link.Down.WiFi.FrameErrorRate != link.Up.WiFi.FrameErrorRate {
				t.Fatalf("cell %s: frame error rate %v down, %v up: one air", c.ID, link.Down.WiFi.FrameErrorRate, link.Up.WiFi.FrameErrorRate)
			}
			links[p] = [2]float64{float64(link.Up.WiFi.FrameErrorRate), float64(link.Up.Loss.Rate)}
			retries[p] = link.Up.WiFi.Retries
		}
		return p
	}

	var aRates []float64
	for _, c := range cellsOf("study-d-full-a") {
		if r := links[linkOf(c)][1]; !slices.Contains(aRates, r) {
			aRates = append(aRates, r)
		}
	}
	slices.Sort(aRates)
	if !slices.Equal(aRates, studyRates) {
		t.Errorf("study-d-full-a's loss rates %v, want Table 1's %v", aRates, studyRates)
	}

	cells := cellsOf("study-d-full-b")
	if len(cells) != 10800 {
		t.Errorf("study-d-full-b has %d cells, want 3 stations × 4 retries × 6 rates × 50 × 3 protocols = 10800", len(cells))
	}
	seen := map[string]int{}
	for _, c := range cells {
		p := linkOf(c)
		seen[fmt.Sprintf("%d/%d/%g/%s", c.point.TopologySpec().Stations, retries[p], links[p][0], c.Protocol)]++
	}
	for _, st := range []int{3, 5, 8} {
		for r := 0; r <= 3; r++ {
			for _, fer := range studyRates {
				for _, p := range []string{"mqtt-tcp", "mqtt-tls", "mqtt-quic"} {
					if n := seen[fmt.Sprintf("%d/%d/%g/%s", st, r, fer, p)]; n != 50 {
						t.Errorf("stations %d, retries %d, frame error rate %g, %s: %d repetitions, want 50", st, r, fer, p, n)
					}
				}
			}
		}
	}
}
