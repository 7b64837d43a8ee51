package cellrun

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"tlab/internal/metrics"
	"tlab/internal/results"
)

// Quality is the rule that re-runs a cell its measurement was disturbed
// in: the emulator released packets late compared with what the cell
// measures, the hypervisor stole CPU time, the host stalled, or another
// tlab run shared the CPUs (warned about, not re-run for). Every attempt's records are kept (the attempt
// column); the summary is the clean attempt's, or the least disturbed one,
// marked so, when none was clean.
type Quality struct {
	// Mode is "normal" (default), "strict" or "off".
	Mode string
	// judge replaces the rule in tests.
	Judge func(s results.Summary, medianMs float64) string
}

// QualityModes are the modes a run may ask for.
var QualityModes = []string{"normal", "strict", "off"}

// thresholds of a mode: attempts in all, and what counts as disturbed.
type thresholds struct {
	Attempts int
	// releaseFrac: the emulator's release error p99 above this share of
	// the median delay being measured.
	releaseFrac float64
	// stealPct: CPU time stolen by the hypervisor.
	stealPct float64
	// stallFrac: the host's longest wake-up stall above this share of
	// the median delay (0: not judged).
	stallFrac float64
}

func (q Quality) Thresholds() (thresholds, error) {
	switch q.Mode {
	case "", "normal":
		return thresholds{Attempts: 3, releaseFrac: 0.05, stealPct: 10}, nil
	case "strict":
		return thresholds{Attempts: 5, releaseFrac: 0.02, stealPct: 5, stallFrac: 0.25}, nil
	case "off":
		return thresholds{Attempts: 1}, nil
	}
	return thresholds{}, fmt.Errorf("quality %q: want %s", q.Mode, strings.Join(QualityModes, ", "))
}

// Disturbance says why a cell's measurement is disturbed ("" when it is
// clean), from its summary's instrument figures and the median delay it
// measured.
func (q Quality) Disturbance(s results.Summary, medianMs float64) string {
	if q.Judge != nil {
		return q.Judge(s, medianMs)
	}
	t, err := q.Thresholds()
	if err != nil || t.Attempts <= 1 {
		return ""
	}
	var why []string
	// A probe that saw nothing leaves the host's figures unknown (NaN),
	// which is not a quiet host: the cell cannot be called clean.
	if v, ok := s.Get("host_wakeup_max_us"); ok {
		if f, isFloat := v.(float64); isFloat && math.IsNaN(f) {
			why = append(why, "the host-noise probe saw nothing: the host's noise during the cell is unknown")
		}
	}
	if rel := s.Float("emu_release_p99_us") / 1000; medianMs > 0 && rel > t.releaseFrac*medianMs {
		why = append(why, fmt.Sprintf("emulator release error p99 %.2f ms is over %.0f %% of the median delay %.2f ms", rel, t.releaseFrac*100, medianMs))
	}
	if st := s.Float("host_steal_pct"); st > t.stealPct {
		why = append(why, fmt.Sprintf("the host stole %.1f %% of the CPU time", st))
	}
	// A stall counts from 10 ms: the probe's normal-priority threads
	// wait that long behind tlab's own busy threads at most.
	if stall := s.Float("host_wakeup_max_us") / 1000; t.stallFrac > 0 && medianMs > 0 && stall > math.Max(10, t.stallFrac*medianMs) {
		why = append(why, fmt.Sprintf("the host stalled for %.2f ms", stall))
	}
	// Other tlab runs are warned about per cell, not re-run for: while
	// they last, a new attempt meets them again; their effect shows in
	// the release error anyway.
	return strings.Join(why, "; ")
}

// medianDelay is the median delay of a cell's measured, completed records.
func MedianDelay(recs []results.Record) float64 {
	var d []float64
	for _, r := range recs {
		if !r.Warmup && r.OK() {
			d = append(d, r.DelayMs)
		}
	}
	slices.Sort(d)
	return metrics.Quantile(d, 0.5)
}

// severity orders disturbed attempts: the least disturbed is reported
// when none was clean.
func Severity(s results.Summary, medianMs float64) float64 {
	v := s.Float("emu_release_p99_us") / 1000 / math.Max(medianMs, 1e-3)
	v += s.Float("host_steal_pct") / 100
	if math.IsNaN(v) {
		return math.Inf(1)
	}
	return v
}

func init() {
	metrics.Register(metrics.Metric{Name: "attempt", Kind: metrics.Instrument, Header: "ATTEMPT",
		Definition: "Which attempt of the cell the row reports (1 unless the quality rule re-ran it); records.csv keeps every attempt's records, with this column."})
	metrics.Register(metrics.Metric{Name: "attempts_discarded", Kind: metrics.Instrument, Header: "RERUNS",
		Definition: "Attempts of the cell the quality rule discarded as disturbed (`tlab run --quality`): the emulator's release error p99 above 5 % (strict: 2 %) of the median delay measured, more than 10 % (5 %) of CPU time stolen, or (strict) a host stall longer than 10 ms and a quarter of the median delay. At most 3 attempts (strict: 5)."})
	metrics.Register(metrics.Metric{Name: "machine", Kind: metrics.Setting,
		Definition: "In a run merged from shards (`tlab merge`), the host name of the machine that measured the cell."})
	metrics.Register(metrics.Metric{Name: "cell_error", Kind: metrics.Setting,
		Definition: "Empty, or why the workload failed the cell (a broker that was down or refused, a connection lost mid-pattern); the cell's records up to the failure are kept and the sweep went on."})
	metrics.Register(metrics.Metric{Name: "quality", Kind: metrics.Setting,
		Definition: "`clean`, or `disturbed: why` when no attempt was clean (the least disturbed one is reported)."})
}
