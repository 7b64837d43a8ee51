package metrics

import "math"

// The packet-level metrics: every frame the workload's link delivered,
// client to server, timed by the emulator from arrival to release (the
// hosts' interfaces meet it within microseconds), as a passive probe on
// both ends (study E's Qosium) sees them. The same for every transport: a
// stream transport's packets are counted as a datagram transport's are.
// NaN where the link does not measure the workload alone (a real path,
// cross traffic).

// upDelay returns f of the client-to-server counters, NaN without a link.
func upDelay(f func(Counters) float64) func(*Input) float64 {
	return func(in *Input) float64 {
		if in.NoLink {
			return math.NaN()
		}
		return f(in.Up)
	}
}

func init() {
	for _, m := range []Metric{
		{Name: "pkt_owd_mean_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD ms", Precision: 2,
			Definition: "Mean one-way delay, client to server, of every packet the link delivered in the measured window (from its arrival at the emulator to its release: queue, transmission, delay, jitter), as a passive probe on both ends sees it (study E measured with one, Qosium). Every transport's packets alike: TCP's and QUIC's segments and ACKs as well as datagrams. Empty across a real path or with cross traffic.",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayMeanMs })},
		{Name: "pkt_owd_p50_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD P50", Precision: 2,
			Definition: "Median of that packet one-way delay (from a histogram: within 12.5 %).",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayP50Ms })},
		{Name: "pkt_owd_p99_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD P99", Precision: 2,
			Definition: "99th percentile of that packet one-way delay (from a histogram: within 12.5 %).",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayP99Ms })},
		{Name: "pkt_owd_std_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD SD", Precision: 3,
			Definition: "Standard deviation (n−1) of that packet one-way delay over the measured window.",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayStdMs })},
		{Name: "pkt_jitter_ms", Kind: Measured, Unit: "ms", Header: "PKT JITTER ms", Precision: 3,
			Definition: "The variation of the client-to-server packet delay over the whole measured window (study E's jitter): the mean absolute difference between consecutive packets' one-way delays (RFC 3550's D), averaged over every packet rather than the running estimate's last value, the same way for every transport.",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayStepMs })},
	} {
		Register(m)
	}
}
