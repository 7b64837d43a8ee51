package metrics

import (
	"math"
	"testing"

	"tlab/internal/results"
)

// TestQuantileOfInfiniteTail: type 7 with infinite values, as numpy's
// percentile reads them: interpolating toward an infinite order statistic
// is infinite, landing exactly on a finite one is that one.
func TestQuantileOfInfiniteTail(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		s    []float64
		q    float64
		want float64
	}{
		{[]float64{1, 2, 3, inf}, 0.5, 2.5},  // numpy: 2.5
		{[]float64{1, 2, 3, inf}, 0.99, inf}, // between 3 and inf
		{[]float64{1, 2, 3, inf}, 2.0 / 3, 3},
		{[]float64{1, inf, inf}, 0.5, inf},
		{[]float64{1, inf, inf}, 0.75, inf}, // between inf and inf, not NaN
		{[]float64{inf}, 0.5, inf},
		// A difference of delays (B − A) is −Inf where A's is +Inf: type 7
		// is (1−f)·x(k) + f·x(k+1), whose limit as x(k) → −Inf is −Inf for
		// any f < 1 (not −Inf+Inf's NaN).
		{[]float64{-inf, 1, 2}, 0.25, -inf},
		{[]float64{-inf, -inf, 1}, 0.25, -inf}, // between −inf and −inf
		{[]float64{-inf, -inf, 1}, 0.75, -inf}, // between −inf and 1
		{[]float64{-inf, 1, 2}, 0.5, 1},
		{[]float64{-inf, 1, 2}, 0.75, 1.5},
		{[]float64{-inf, inf}, 0.5, math.NaN()}, // −Inf·½ + Inf·½: no limit
		{[]float64{-inf, inf}, 1, inf},
	} {
		if got := Quantile(c.s, c.q); got != c.want && !(near(got, c.want)) && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("Quantile(%v, %v) = %v, want %v", c.s, c.q, got, c.want)
		}
	}
}

// periodicInput is n measured requests answered in 1, 2, ... ms, of
// which failed failed and unsent were never sent.
func periodicInput(n, failed, unsent int) *Input {
	in := &Input{}
	for i := range n {
		r := results.Record{Seq: i, ScheduledMs: float64(25 * i), SentMs: float64(25 * i), DelayMs: float64(i + 1)}
		r.DoneMs = r.SentMs + r.DelayMs
		switch {
		case i >= n-unsent:
			r.Unsent, r.Error = true, "unsent"
			r.DelayMs, r.DoneMs = math.NaN(), math.NaN()
		case i >= n-unsent-failed:
			r.Error = "timeout"
			r.DelayMs, r.DoneMs = math.NaN(), math.NaN()
		}
		in.Records = append(in.Records, r)
	}
	return in
}

func compute(t *testing.T, in *Input, names ...string) map[string]float64 {
	t.Helper()
	fs, err := Default.Compute(names, in)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fs {
		out[f.Name] = f.Value.(float64)
	}
	return out
}

// TestFailedRequestsCountAgainstPercentiles: a request that never came
// back is, for the application, later than any delay. Of 200 requests
// with 3 that timed out and 2 never sent, the 99th percentile is beyond
// any bound, while the median is the median of all 200 (the 100th and
// 101st delays), not of the 195 that completed.
func TestFailedRequestsCountAgainstPercentiles(t *testing.T) {
	v := compute(t, periodicInput(200, 3, 2), "delay_p50_ms", "delay_p95_ms", "delay_p99_ms",
		"sched_delay_p99_ms", "sched_delay_p50_ms", "failed_pct", "errors", "unsent", "requests", "delay_mean_ms")
	if !math.IsInf(v["delay_p99_ms"], 1) || !math.IsInf(v["sched_delay_p99_ms"], 1) {
		t.Errorf("p99 with 2.5 %% of requests unanswered: delay %v, sched %v; want +Inf", v["delay_p99_ms"], v["sched_delay_p99_ms"])
	}
	// Type 7 over 200 values: h = 199 × 0.5 = 99.5, between the 100th
	// (100 ms) and 101st (101 ms) values.
	if !near(v["delay_p50_ms"], 100.5) || !near(v["sched_delay_p50_ms"], 100.5) {
		t.Errorf("p50 = %v (sched %v), want 100.5 (over all 200 requests)", v["delay_p50_ms"], v["sched_delay_p50_ms"])
	}
	// h = 199 × 0.95 = 189.05: the 190th and 191st values, both answered.
	if !near(v["delay_p95_ms"], 190.05) {
		t.Errorf("p95 = %v, want 190.05", v["delay_p95_ms"])
	}
	if !near(v["failed_pct"], 2.5) || v["errors"] != 3 || v["unsent"] != 2 || v["requests"] != 195 {
		t.Errorf("failed_pct %v errors %v unsent %v requests %v; want 2.5, 3, 2, 195", v["failed_pct"], v["errors"], v["unsent"], v["requests"])
	}
	// The mean is over completed requests only, and says so.
	if !near(v["delay_mean_ms"], 98) {
		t.Errorf("mean = %v, want 98 (of the 195 answered)", v["delay_mean_ms"])
	}
	m, _ := Lookup("delay_mean_ms")
	if !m.OverCompleted {
		t.Error("delay_mean_ms is computed over completed requests only: it must say so (OverCompleted)")
	}
	// All answered: the same percentiles as before.
	all := compute(t, periodicInput(200, 0, 0), "delay_p99_ms", "failed_pct")
	if !near(all["delay_p99_ms"], 198.01) || all["failed_pct"] != 0 {
		t.Errorf("all answered: p99 %v failed_pct %v; want 198.01, 0", all["delay_p99_ms"], all["failed_pct"])
	}
}

// TestInfiniteIsShownAsSuch: a table shows an infinite percentile as
// "inf", never as "-" (not measured).
func TestInfiniteIsShownAsSuch(t *testing.T) {
	if got := Default.Format("delay_p99_ms", math.Inf(1)); got != "inf" {
		t.Errorf("Format(+Inf) = %q, want inf", got)
	}
	if got := Default.Format("delay_p99_ms", math.NaN()); got != "-" {
		t.Errorf("Format(NaN) = %q, want -", got)
	}
}

// TestDeadlinesCountFromTheSchedule: a control loop's period is a
// deadline from when each request was due. Requests every 25 ms: one
// answered 10 ms after a 20 ms late send (30 ms from its schedule)
// misses, though its own delay is 10 ms; one answered in 24 ms meets;
// one that failed misses. Without a period (no interval_ms) only the
// failed one counts.
func TestDeadlinesCountFromTheSchedule(t *testing.T) {
	in := &Input{Facts: map[string]float64{"interval_ms": 25}, Records: []results.Record{
		{Seq: 0, ScheduledMs: 0, SentMs: 20, DoneMs: 30, DelayMs: 10},
		{Seq: 1, ScheduledMs: 25, SentMs: 25, DoneMs: 49, DelayMs: 24},
		{Seq: 2, ScheduledMs: 50, SentMs: 50, DoneMs: math.NaN(), DelayMs: math.NaN(), Error: "timeout"},
		{Seq: 3, ScheduledMs: 75, SentMs: 75, DoneMs: 100, DelayMs: 25},
	}}
	if got := compute(t, in, "deadline_miss_pct")["deadline_miss_pct"]; got != 50 {
		t.Errorf("deadline_miss_pct = %v, want 50 (the late send and the failure of 4)", got)
	}
	in.Facts = nil
	if got := compute(t, in, "deadline_miss_pct")["deadline_miss_pct"]; got != 25 {
		t.Errorf("without a period: %v, want 25 (the failure only)", got)
	}
}

// TestDeadlineMissesByTheWorkloadsMarkAndUnsent: deadline_miss_pct is the
// share of measured messages that missed, among all measured ones, the
// never-sent included. Requests every 25 ms:
//   - answered in 10 ms but marked by the workload as a miss
//     (Extra["deadline_miss"] = 1: it judged its own deadline): a miss;
//   - answered in 10 ms, marked 0: met;
//   - answered in 24 ms: met;
//   - never sent (the schedule ran past it): a miss, and a measured
//     message, so in the denominator.
//
// 2 of 4: 50 % (not 25 % ignoring the mark, nor 2 of the 3 sent, 67 %).
func TestDeadlineMissesByTheWorkloadsMarkAndUnsent(t *testing.T) {
	in := &Input{Facts: map[string]float64{"interval_ms": 25}, Records: []results.Record{
		{Seq: 0, ScheduledMs: 0, SentMs: 0, DoneMs: 10, DelayMs: 10, Extra: map[string]float64{"deadline_miss": 1}},
		{Seq: 1, ScheduledMs: 25, SentMs: 25, DoneMs: 35, DelayMs: 10, Extra: map[string]float64{"deadline_miss": 0}},
		{Seq: 2, ScheduledMs: 50, SentMs: 50, DoneMs: 74, DelayMs: 24},
		{Seq: 3, ScheduledMs: 75, SentMs: math.NaN(), DoneMs: math.NaN(), DelayMs: math.NaN(), Unsent: true, Error: "unsent"},
	}}
	if got := compute(t, in, "deadline_miss_pct")["deadline_miss_pct"]; got != 50 {
		t.Errorf("deadline_miss_pct = %v, want 50 (the marked miss and the unsent of 4)", got)
	}
}
