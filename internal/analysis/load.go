package analysis

import (
	"fmt"
	"slices"
	"strings"

	"tlab/internal/results"
	"tlab/internal/stats"
)

func init() {
	Register(Step{
		Name:    "load",
		Doc:     "what cross traffic adds to each stack's delay, where the run sweeps cross.flows from 0",
		Columns: []string{"delay_ms"},
		Files:   comparisonFiles(LoadFile),
		Compute: func(v *View, a *Analysis) error {
			var err error
			if a.Load, a.LoadComparisons, err = loadEffects(v); err != nil {
				return fmt.Errorf("latency under load: %w", err)
			}
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			if len(a.LoadComparisons) == 0 {
				return nil, nil
			}
			return comparisonFiles(LoadFile), stats.WriteNamed(dir, LoadFile, a.LoadComparisons)
		},
	})
}

// LoadKey is the swept field whose baseline value "0" is the unloaded
// link: a run that sweeps it gets the report's "Latency under load".
const LoadKey = "cross.flows"

// LoadEffect is what the cross traffic adds to one stack's delay on one
// network and queue (and set of other swept values).
type LoadEffect struct {
	Network, Protocol, Swept, Flows string
	BaseP50, LoadedP50              float64
	// AddedP50 is the median difference (loaded − unloaded) with its 95 %
	// bootstrap interval, over requests or repetitions.
	AddedP50, Low, High float64
	// Tail is the tail column compared (delay_p99_ms, or the workload's
	// own: message_latency_p99_ms, frame_rtt_p99_ms).
	Tail               string
	BaseP99, LoadedP99 float64
	AddedP99           float64 // difference of the cells' tail (means over repetitions)
	Verdict            string
}

// tailColumns are the columns of a cell's 99th-percentile record delay,
// by workload.
var tailColumns = []string{"delay_p99_ms", "frame_rtt_p99_ms", "message_latency_p99_ms"}

// loadEffects compares every loaded cell with its unloaded twin, when the
// run sweeps cross.flows with 0 among its values.
func loadEffects(v *View) ([]LoadEffect, []stats.Comparison, error) {
	r := v.Run
	has0, hasLoad := false, false
	for _, row := range r.Rows {
		switch v := row.Param(LoadKey); {
		case v == "0":
			has0 = true
		case v != "":
			hasLoad = true
		}
	}
	if !has0 || !hasLoad {
		return nil, nil, nil
	}
	cs, err := stats.AgainstBaselineOver(r, v.records(), LoadKey, "0", v.Seed)
	if err != nil {
		return nil, nil, err
	}
	var out []LoadEffect
	for _, c := range cs {
		if c.Metric != "delay_ms" {
			continue
		}
		network, protocol, _ := strings.Cut(c.Profile, " / ")
		e := LoadEffect{Network: network, Protocol: protocol, Swept: c.Params, Flows: c.B,
			BaseP50: c.MedianA, LoadedP50: c.MedianB, AddedP50: c.Diff, Low: c.DiffLow, High: c.DiffHigh, Verdict: c.Verdict}
		for _, col := range tailColumns {
			if e.BaseP99 = meanOf(r.Rows, network, protocol, c.Params, c.A, col); e.BaseP99 == e.BaseP99 {
				e.Tail = col
				e.LoadedP99 = meanOf(r.Rows, network, protocol, c.Params, c.B, col)
				break
			}
		}
		e.AddedP99 = e.LoadedP99 - e.BaseP99
		out = append(out, e)
	}
	return out, cs, nil
}

// meanOf is the mean of a column over the rows of one network, protocol,
// set of other swept values and value of LoadKey.
func meanOf(rows []results.Summary, network, protocol, swept, flows, col string) float64 {
	var vs []float64
	for _, row := range rows {
		if row.Profile != network || row.Protocol != protocol || row.Param(LoadKey) != flows {
			continue
		}
		var others []string
		for _, p := range row.Params {
			if p.Key != LoadKey {
				others = append(others, p.Value)
			}
		}
		if strings.Join(others, " / ") != swept {
			continue
		}
		vs = append(vs, row.Float(col))
	}
	vs = slices.DeleteFunc(vs, func(v float64) bool { return v != v })
	if len(vs) == 0 {
		return nan()
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs))
}

func nan() float64 { z := 0.0; return z / z }
