package qoo

import (
	"fmt"
	"math"
	"slices"

	"tlab/internal/metrics"
	"tlab/internal/results"
)

// CellScores scores every cell of a run's records.csv against p: the
// latency distribution is the record delay of the messages that completed
// (the warm-up left out), the loss the share of measured messages that
// did not (failed, lost or never sent), as the draft counts a packet that
// never arrived. The throughput, which only a profile with a minimum
// reads, is the cell's goodput as the bulk workload defines it (payload of
// the completed messages × 8 over the time to the last byte): the
// capacity a transfer found, which is the draft's measured throughput
// only for a workload that asks for all it can get. Every attempt of a
// re-run cell counts, as in the run's comparisons.
//
// A PerInterval profile is scored in each cell against its bounds times
// the cell's request interval (records.csv's interval_ms): one profile
// follows a swept period. Records without that column are an error, not
// a score against a guessed period.
func CellScores(recordsPath string, p Profile) (map[string]Result, error) {
	return CellScoresOver(func(need []string, fn func(results.RecordRow) error) error {
		return results.ScanRecords(recordsPath, need, fn)
	}, p)
}

// CellScoresOver is CellScores over records handed by scan (as
// results.ScanRecords hands them): the analysis reads a run's records once
// for every step.
func CellScoresOver(scan func(need []string, fn func(results.RecordRow) error) error, p Profile) (map[string]Result, error) {
	delays := map[string][]float64{}
	total := map[string]int{}
	bytes, last := map[string]float64{}, map[string]float64{}
	interval := map[string]float64{}
	need := []string{"delay_ms", "resp_bytes", "done_ms"}
	if p.PerInterval {
		need = append(need, "interval_ms")
	}
	err := scan(need, func(row results.RecordRow) error {
		if row.Warmup {
			return nil
		}
		if p.PerInterval {
			interval[row.Cell] = row.Values[3]
		}
		total[row.Cell]++
		if d := row.Values[0]; !row.Failed && results.Measured(d) {
			delays[row.Cell] = append(delays[row.Cell], d)
			bytes[row.Cell] += row.Values[1]
			last[row.Cell] = max(last[row.Cell], row.Values[2])
		}
		return nil
	})
	if err != nil && p.PerInterval {
		return nil, fmt.Errorf("profile %s follows the request interval (a periodic workload's interval_ms): %w", p.ID, err)
	}
	if err != nil {
		return nil, err
	}
	out := map[string]Result{}
	for cell, n := range total {
		d := delays[cell]
		slices.Sort(d)
		lost := 100 * float64(n-len(d)) / float64(n)
		throughput := metrics.GoodputMbps(bytes[cell], last[cell])
		cp := p
		if p.PerInterval {
			if !(interval[cell] > 0) {
				return nil, fmt.Errorf("cell %s: interval_ms %v: profile %s needs the request interval", cell, interval[cell], p.ID)
			}
			cp = p.ForInterval(interval[cell])
		}
		out[cell] = cp.Score(Measurement{LossPct: lost, ThroughputMbps: throughput, LatencyAt: func(pct float64) float64 {
			if len(d) == 0 {
				return math.NaN()
			}
			return metrics.Quantile(d, pct/100)
		}})
	}
	return out, nil
}
