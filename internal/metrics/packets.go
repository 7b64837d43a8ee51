package metrics

import "math"

// The packet-level metrics: every frame the workload's link delivered,
// client to server, timed by the emulator as a passive probe on both ends
// (study E's Qosium) sees them: from the start of the frame's
// transmission, since packet capture taps after the sending host's
// transmit queue, which the emulated queue stands for, to its release
// (the hosts' interfaces meet the emulator within microseconds). Two more
// count the wait in that queue too. The same for every transport: a
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
			Definition: "Mean one-way delay, client to server, of every packet the link delivered in the measured window, as a passive probe on both ends sees it (study E measured with one, Qosium): from the start of the packet's transmission to its release (transmission, delay, jitter), since packet capture taps after the sending host's transmit queue, which the link's queue stands for (pkt_owd_queued_* add that wait). Every transport's packets alike: TCP's and QUIC's segments and ACKs as well as datagrams. Empty across a real path or with cross traffic.",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayMeanMs })},
		{Name: "pkt_owd_p50_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD P50", Precision: 2,
			Definition: "Median of that packet one-way delay (from a histogram: within 12.5 %).",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayP50Ms })},
		{Name: "pkt_owd_p99_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD P99", Precision: 2,
			Definition: "99th percentile of that packet one-way delay (from a histogram: within 12.5 %).",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayP99Ms })},
		{Name: "pkt_owd_std_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD SD", Precision: 3,
			Definition: "Standard deviation (n−1) of that packet one-way delay over the measured window: study E's jitter as tlab reads it (\"the variation in packet delay from client to server\"), the statistic its network profiles were calibrated to and its jitter figure draws (pkt_jitter_ms is the mean step between consecutive packets).",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayStdMs })},
		{Name: "pkt_jitter_ms", Kind: Measured, Unit: "ms", Header: "PKT JITTER ms", Precision: 3,
			Definition: "The mean step of the client-to-server packet delay over the whole measured window: the mean absolute difference between consecutive packets' one-way delays (RFC 3550's D), averaged over every packet rather than the running estimate's last value, the same way for every transport.",
			Compute:    upDelay(func(c Counters) float64 { return c.DelayStepMs })},
		{Name: "pkt_rtt_mean_ms", Kind: Measured, Unit: "ms", Header: "PKT RTT ms", Precision: 2,
			Definition: "Study E's RTT, packet level: the mean one-way delay of every packet the link delivered client to server (pkt_owd_mean_ms) plus the same server to client, the round trip of a packet and a packet coming back as probes on both ends see them (not matched packet by packet: a sum of the two directions' means). frame_rtt_* is tlab's per-frame figure, from a frame's first byte to its result. Empty across a real path or with cross traffic.",
			Compute: func(in *Input) float64 {
				if in.NoLink {
					return math.NaN()
				}
				return in.Up.DelayMeanMs + in.Down.DelayMeanMs
			}},
		{Name: "pkt_owd_queued_mean_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD+Q ms", Precision: 2,
			Definition: "Mean one-way delay, client to server, of every packet the link delivered, from its arrival at the link: pkt_owd_mean_ms plus the wait in the sender's transmit queue (the link's queue), which a probe on the sending host does not see but the packet does.",
			Compute:    upDelay(func(c Counters) float64 { return c.QueuedDelayMeanMs })},
		{Name: "pkt_owd_queued_p99_ms", Kind: Measured, Unit: "ms", Header: "PKT OWD+Q P99", Precision: 2,
			Definition: "99th percentile of that delay from arrival, the queue's wait included (from a histogram: within 12.5 %).",
			Compute:    upDelay(func(c Counters) float64 { return c.QueuedDelayP99Ms })},
	} {
		Register(m)
	}
}
