package metrics_test

import (
	"runtime"
	"testing"

	"tlab/internal/metrics"
	"tlab/internal/results"
	_ "tlab/internal/workload" // the workloads' own metrics, as a run has them
)

// BenchmarkCellPerRecord measures what one record costs a cell: the
// memory a cell holds for its records (its []results.Record, as
// CellResult keeps them), the memory every registered metric allocates
// to compute the summary over them, and the time it takes, each per
// record, for a cell of a 1 ms interval (360 000 records: six minutes;
// an hour is ten times as many). docs/methodology.md ("What a long study
// costs") carries the figures.
//
//	go test ./internal/metrics -run ^$ -bench CellPerRecord -benchtime 3x
func BenchmarkCellPerRecord(b *testing.B) {
	const n = 360_000
	var names []string
	for _, m := range metrics.All() {
		names = append(names, m.Name)
	}
	var held, computed uint64
	for b.Loop() {
		var before, mid, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		recs := make([]results.Record, 0, n)
		for seq := range n {
			s := float64(seq)
			r := results.Record{Seq: seq, ScheduledMs: s, SentMs: s + 0.01, DoneMs: s + 0.6 + float64(seq%97)/300,
				DelayMs: 0.59 + float64(seq%97)/300, ReqBytes: 256, RespBytes: 256, ConnID: 1}
			if seq%1000 == 7 {
				r.Error = "timeout"
			}
			recs = append(recs, r)
		}
		runtime.ReadMemStats(&mid)
		in := &metrics.Input{Records: recs, Facts: map[string]float64{"interval_ms": 1}}
		if _, err := metrics.Default.Compute(names, in); err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		held = mid.TotalAlloc - before.TotalAlloc
		computed = after.TotalAlloc - mid.TotalAlloc
		runtime.KeepAlive(recs)
	}
	b.ReportMetric(float64(held)/n, "held-B/record")
	b.ReportMetric(float64(computed)/n, "metrics-B/record")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}
