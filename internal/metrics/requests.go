package metrics

import (
	"math"

	"tlab/internal/results"
)

// The metrics of request/response workloads (study A's periodic requests,
// and any workload whose records carry a delay), and the columns every
// cell has. Their names are stable: docs/metrics.md is generated from them.

// LateThresholdMs is how late a send must be, against its schedule, to
// count as late: the scheduler itself keeps sends within ~0.1 ms.
const LateThresholdMs = 1.0

// Unsent tells whether a record is a request that was never sent.
func Unsent(r results.Record) bool { return r.Unsent }

// sent counts the measured records that were sent (failed or not).
func sent(in *Input) float64 {
	n := 0
	for _, r := range in.Records {
		if !Unsent(r) {
			n++
		}
	}
	return float64(n)
}

// sessionsUsed counts the connections the window used: the ones the
// client established in it (fact conns_opened) and the ones established
// before it that carried one of its requests. A client numbers its
// connections in the order it first uses them, so the latter are the
// window's connection numbers up to the highest the warm-up used (fact
// warmup_conn_id_max; none without a warm-up, whose window holds the
// first connection's dial).
func sessionsUsed(in *Input) float64 {
	opened := in.Fact("conns_opened")
	if math.IsNaN(opened) {
		return math.NaN()
	}
	carried := map[int]bool{}
	if last, ok := in.Facts["warmup_conn_id_max"]; ok {
		for _, r := range in.Records {
			if !Unsent(r) && r.ConnID > 0 && float64(r.ConnID) <= last {
				carried[r.ConnID] = true
			}
		}
	}
	return opened + float64(len(carried))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// schedDelayQuantile is a quantile of the delay from the schedule: from
// when a request was due to when its response was whole, a request that
// never completed counting as beyond any bound.
func schedDelayQuantile(q float64) func(*Input) float64 {
	return func(in *Input) float64 {
		var d []float64
		for _, r := range in.Records {
			if r.OK() {
				d = append(d, r.DoneMs-r.ScheduledMs)
			}
		}
		return QuantileCounting(d, in.Unfinished(), q)
	}
}

// DeadlineMissPct is the share of measured messages whose answer was not
// whole by the time the next message was due (done − scheduled >
// interval_ms, the period of the schedule) or never came: a control
// loop's missed periods, an AR user's lagging frames. A workload that
// judges the deadline itself marks a record with Extra["deadline_miss"].
func DeadlineMissPct(in *Input) float64 {
	period := in.Fact("interval_ms")
	miss := 0
	for _, r := range in.Records {
		switch {
		case !r.OK(), r.Extra["deadline_miss"] == 1:
			miss++
		case period > 0 && r.DoneMs-r.ScheduledMs > period:
			miss++
		}
	}
	return ratio(float64(miss)*100, float64(len(in.Records)))
}

// FailedPct is the share of measured records that never completed, in
// percent (NaN without records).
func FailedPct(in *Input) float64 {
	return ratio(float64(in.Unfinished())*100, float64(len(in.Records)))
}

// percentileNote is what every delay percentile's definition says of the
// messages that never completed.
const percentileNote = " A message that never completed (failed, lost or never sent) counts as a delay beyond any bound: a percentile that falls among them is `inf`."

func delayCI(q float64, high bool) func(*Input) float64 {
	return func(in *Input) float64 {
		lo, hi := QuantileCI(in.sortedDelays(), q, 0.95)
		if high {
			return hi
		}
		return lo
	}
}

func delayQuantile(q float64) func(*Input) float64 {
	return func(in *Input) float64 { return in.DelayQuantile(q) }
}

func init() {
	for _, m := range []Metric{
		{Name: "rtt_ms", Kind: Parameter, Unit: "ms", Header: "RTT ms", Precision: 2,
			Definition: "The link's configured base RTT (both directions' delays)."},
		{Name: "requests", Kind: Measured, Header: "REQUESTS",
			Definition: "Measured requests (after the warm-up) that completed.",
			Compute:    func(in *Input) float64 { return float64(len(in.Delays()) + in.removed) }},
		{Name: "errors", Kind: Measured, Header: "ERRORS",
			Definition: "Measured requests that were sent and failed (timeout, reset, refused).",
			Compute: func(in *Input) float64 {
				n := 0
				for _, r := range in.Records {
					if !r.OK() && !Unsent(r) {
						n++
					}
				}
				return float64(n)
			}},
		{Name: "failed_pct", Kind: Measured, Unit: "%", Bounds: []float64{0, 100}, Header: "FAILED %", Precision: 1,
			Definition: "Share of the measured messages (requests, frames, uploads, MQTT messages) that never completed: sent and failed or lost, or never sent. A requirement on a figure computed over completed messages only (a mean, a spread, a jitter) also requires this to be 0, unless the requirements bound it themselves.",
			Compute:    FailedPct},
		{Name: "deadline_miss_pct", Kind: Measured, Unit: "%", Bounds: []float64{0, 100}, Header: "MISSED %", Precision: 1,
			Definition: "Messages whose answer was not whole when the next message was due (`done_ms − scheduled_ms` over the schedule's period, `interval_ms`) or never came, per message of the schedule: a control loop's missed periods, counted from when each request was due (a late send misses too); for frames, what an AR user sees as lag.",
			Compute:    DeadlineMissPct},
		{Name: "unsent", Kind: Measured, Header: "UNSENT",
			Definition: "Measured requests a protocol that cannot multiplex never got to send before the schedule ended.",
			Compute: func(in *Input) float64 {
				n := 0
				for _, r := range in.Records {
					if Unsent(r) {
						n++
					}
				}
				return float64(n)
			}},
		{Name: "delay_p5_ms", Kind: Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "P5 ms", Precision: 2,
			Definition: "5th percentile of the response delay over every measured request, by linear interpolation between order statistics (type 7: numpy's, pandas' and R's default)." + percentileNote,
			Compute:    delayQuantile(0.05)},
		{Name: "delay_p25_ms", Kind: Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "P25 ms", Precision: 2, Definition: "25th percentile of the response delay (type 7)." + percentileNote, Compute: delayQuantile(0.25)},
		{Name: "delay_p50_ms", Kind: Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "P50 ms", Precision: 2, Definition: "Median response delay (type 7)." + percentileNote, Compute: delayQuantile(0.50)},
		{Name: "delay_p75_ms", Kind: Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "P75 ms", Precision: 2, Definition: "75th percentile of the response delay (type 7)." + percentileNote, Compute: delayQuantile(0.75)},
		{Name: "delay_p95_ms", Kind: Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "P95 ms", Precision: 2, Definition: "95th percentile of the response delay (type 7)." + percentileNote, Compute: delayQuantile(0.95)},
		{Name: "delay_p99_ms", Kind: Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "P99 ms", Precision: 2, Definition: "99th percentile of the response delay (type 7)." + percentileNote, Compute: delayQuantile(0.99)},
		{Name: "sched_delay_p50_ms", Kind: Measured, Unit: "ms", Header: "SCHED P50 ms", Precision: 2,
			Definition: "Median delay from the schedule: from when a request was due to when its whole response had arrived (`done_ms − scheduled_ms`), what a control loop waits, including the time a request waited to be sent (no coordinated omission)." + percentileNote,
			Compute:    schedDelayQuantile(0.50)},
		{Name: "sched_delay_p95_ms", Kind: Measured, Unit: "ms", Header: "SCHED P95 ms", Precision: 2, Definition: "95th percentile of the delay from the schedule." + percentileNote, Compute: schedDelayQuantile(0.95)},
		{Name: "sched_delay_p99_ms", Kind: Measured, Unit: "ms", Header: "SCHED P99 ms", Precision: 2, Definition: "99th percentile of the delay from the schedule." + percentileNote, Compute: schedDelayQuantile(0.99)},
		{Name: "delay_p50_ci_low_ms", Kind: Measured, Unit: "ms", Header: "P50 CI low", Precision: 2,
			Definition: "Lower bound of a 95 % confidence interval of the median delay: an order statistic whose rank comes from the exact binomial distribution, with no assumption on the delays' distribution. Two rows whose intervals do not overlap differ. The records are not independent (consecutive requests share the link's state), so read it as a lower bound of the uncertainty.",
			Compute:    delayCI(0.5, false)},
		{Name: "delay_p50_ci_high_ms", Kind: Measured, Unit: "ms", Header: "P50 CI high", Precision: 2, Definition: "Upper bound of that interval.", Compute: delayCI(0.5, true)},
		{Name: "delay_p95_ci_low_ms", Kind: Measured, Unit: "ms", Header: "P95 CI low", Precision: 2, Definition: "Lower bound of a 95 % distribution-free confidence interval of the 95th percentile delay.", Compute: delayCI(0.95, false)},
		{Name: "delay_p95_ci_high_ms", Kind: Measured, Unit: "ms", Header: "P95 CI high", Precision: 2, Definition: "Upper bound of that interval (NaN when too few delays bound it).", Compute: delayCI(0.95, true)},
		{Name: "delay_mean_ms", Kind: Measured, OverCompleted: true, Unit: "ms", Header: "MEAN ms", Precision: 2, Definition: "Mean response delay of the requests that completed (`failed_pct` says how many did not).",
			Compute: func(in *Input) float64 { return in.DelayDistribution().Mean }},
		{Name: "delay_std_ms", Kind: Measured, OverCompleted: true, Unit: "ms", Header: "STD ms", Precision: 2, Definition: "Sample standard deviation (n−1) of the response delay.",
			Compute: func(in *Input) float64 { return in.DelayDistribution().Std }},
		{Name: "jitter_ms", Kind: Measured, OverCompleted: true, Unit: "ms", Header: "JITTER ms", Precision: 2,
			Definition: "RFC 4689 jitter as study A defines it: the mean absolute difference between the delays of consecutive requests, in send order.",
			Compute:    func(in *Input) float64 { return Jitter(in.Delays()) }},
		{Name: "jitter_pct", Kind: Measured, OverCompleted: true, Verdict: true, Unit: "%", Header: "JITTER %", Precision: 1,
			Definition: "`jitter_ms / delay_mean_ms × 100`.",
			Compute:    func(in *Input) float64 { return Jitter(in.Delays()) / in.DelayDistribution().Mean * 100 }},
		{Name: "bytes_per_request", Kind: Measured, Verdict: true, Unit: "B", Header: "B/REQ", Precision: 0,
			Definition: "All bytes the client sent during the measured window (every Ethernet frame it put on the link: headers, handshakes, ACKs and control frames included) divided by the requests it sent.",
			Compute:    func(in *Input) float64 { return ratio(in.Bytes(in.Up.RxBytes), sent(in)) }},
		{Name: "bytes_per_response", Kind: Measured, Unit: "B", Header: "B/RESP", Precision: 0,
			Definition: "All bytes delivered to the client during the window divided by the responses it received.",
			Compute:    func(in *Input) float64 { return ratio(in.Bytes(in.Down.TxBytes), float64(len(in.Delays())+in.removed)) }},
		{Name: "conns_per_1000", Kind: Measured, Unit: "1/1000 requests", Header: "CONN/1000", Precision: 1,
			Definition: "Transport connections (sessions) used during the window per 1000 requests sent, as study A counts the sessions \"used during each experiment\": those the client established in the window, and those it opened before (in the warm-up) that carried a request in it, so one connection kept throughout counts once. Its mean over repetitions is the study's average over a series of experiments.",
			Compute:    func(in *Input) float64 { return ratio(sessionsUsed(in)*1000, sent(in)) }},
		{Name: "late_sends", Kind: Measured, Header: "LATE",
			Definition: "Requests sent more than 1 ms after their schedule.",
			Compute: func(in *Input) float64 {
				n := 0
				for _, r := range in.Records {
					if !Unsent(r) && r.LatenessMs > LateThresholdMs {
						n++
					}
				}
				return float64(n)
			}},
		{Name: "lateness_p99_ms", Kind: Measured, Unit: "ms", Header: "LATE p99 ms", Precision: 2,
			Definition: "99th percentile of the lateness of the requests that were sent.",
			Compute: func(in *Input) float64 {
				var l []float64
				for _, r := range in.Records {
					if !Unsent(r) {
						l = append(l, r.LatenessMs)
					}
				}
				return Describe(l).P99
			}},
		{Name: "outliers_removed", Kind: Measured, Header: "OUTLIERS",
			Definition: "Delays dropped by the 3-scaled-MAD rule (`metrics.remove_outliers`, study B's rule; 0 when not asked for).",
			Compute:    func(in *Input) float64 { in.Delays(); return float64(in.removed) }},
		{Name: "tls_version", Kind: Setting, Definition: "TLS version over TCP that the client's handshakes negotiated (read from each connection; several joined by +); empty for protocols without TLS over TCP (QUIC always uses 1.3) and when no handshake completed."},
		{Name: "h1_client", Kind: Setting, Definition: "The HTTP/1.1 client the row was measured with: strict (tlab's: the idle connection or a new one the request waits for) or transport (net/http's Transport with its defaults); empty for other protocols."},
		{Name: "key_exchange", Kind: Setting, Definition: "TLS key exchange that the client's handshakes negotiated (read from each connection, QUIC's too; several joined by +); empty for protocols without TLS and when no handshake completed."},
		{Name: "resumption", Kind: Setting, Definition: "Whether the connections the client opened after its first resumed a TLS session, read from their handshakes: true when all did, false when none did, true+false when some did; empty for protocols without TLS and when the cell opened no second connection (settings.resumption says what was allowed)."},
		{Name: "zero_rtt", Kind: Setting, Definition: "Whether the connections that resumed sent 0-RTT data, read from their handshakes (true, false, true+false); empty for protocols that do not offer it and when no connection resumed (settings.zero_rtt says what was allowed)."},
		{Name: "tcp_congestion", Kind: Setting, Definition: "TCP congestion control the client's connections ran, read from each socket (TCP_CONGESTION; several joined by +); empty for protocols that do not run over TCP and when no connection was opened."},
		{Name: "tcp_ecn", Kind: Setting, Definition: "Whether the client's TCP connections negotiated ECN, read from each socket (TCP_INFO's ECN option: both ends asked, settings.tcp_ecn); true+false when they differ; empty for protocols that do not run over TCP and when no connection was opened."},
		{Name: "emu_release_p50_us", Kind: Instrument, Unit: "µs", Header: "EMU p50 us", Precision: 0,
			Definition: "The emulator's own release error (when a frame was handed to the kernel minus when it was due), median over the cell's measured window: the instrument's accuracy beside the result."},
		{Name: "emu_release_p99_us", Kind: Instrument, Unit: "µs", Header: "EMU p99 us", Precision: 0,
			Definition: "99th percentile of the emulator's release error over the cell's measured window."},
		{Name: "emu_release_p999_us", Kind: Instrument, Unit: "µs", Header: "EMU p99.9 us", Precision: 0,
			Definition: "99.9th percentile of the emulator's release error over the cell's measured window."},
		{Name: "emu_release_max_us", Kind: Instrument, Unit: "µs", Header: "EMU max us", Precision: 0,
			Definition: "Largest release error of the emulator over the cell's measured window."},
		{Name: "emu_read_lag_p99_us", Kind: Instrument, Unit: "µs", Header: "READ LAG p99 us", Precision: 0,
			Definition: "99th percentile, over the cell's measured window, of how long after the kernel received a frame the emulator read it. The emulator times frames by the kernel's receive timestamp, so this lag (a stall of the emulator's thread) does not delay frames in the models; it is what reading times would have got wrong."},
		{Name: "emu_read_lag_max_us", Kind: Instrument, Unit: "µs", Header: "READ LAG max us", Precision: 0,
			Definition: "Longest read lag over the cell's measured window (see emu_read_lag_p99_us)."},
		{Name: "emu_loop_switches_per_s", Kind: Instrument, Unit: "1/s", Header: "LOOP CSW/s", Precision: 1,
			Definition: "Context switches per second of the emulator's forwarding loop thread over the cell's measured window (voluntary and involuntary, getrusage RUSAGE_THREAD): each one is a time the busy-polling loop lost its CPU, a likely part of the release error's tail. Near zero when nothing else runs on the emulator's CPU."},
		{Name: "emu_busy_pct", Kind: Instrument, Unit: "%", Header: "LOOP BUSY %", Precision: 1,
			Definition: "Share of the cell's measured window that the emulator's loop spent in rounds that moved a frame (received, released or dropped one), the rest being polling or blocked: its load, which a busy-polling loop's CPU time (always 100 %) does not show."},
		{Name: "emu_cpu_s", Kind: Instrument, Unit: "s", Header: "EMU CPU s", Precision: 2,
			Definition: "CPU time (user and system, all its threads) the emulator's process used over the cell's measured window (getrusage): what the instrument cost the machine, beside its release error. A busy-polling engine uses the whole window at any load; an adaptive one about what its traffic costs."},
		{Name: "emu_kernel_drops", Kind: Instrument, Unit: "", Header: "KERNEL DROPS", Precision: 0,
			Definition: "Frames the kernel dropped at the emulator's packet sockets before the emulator read them (PACKET_STATISTICS), over the cell's measured window: a loss that no link model decided. Should be 0."},
		{Name: "host_steal_pct", Kind: Instrument, Unit: "%", Header: "STEAL %", Precision: 1,
			Definition: "CPU time the hypervisor gave to other machines during the cell's measured window (/proc/stat's steal), as a share of all CPU time."},
		{Name: "host_wakeup_p99_us", Kind: Instrument, Unit: "µs", Header: "HOST p99 us", Precision: 0,
			Definition: "99th percentile of the wake-up latency during the measured window: how late a thread per CPU, sleeping to an absolute time every 10 ms at normal priority, woke (cyclictest's measure, with tlab's own busy threads included; `host_steal_pct` is the host alone)."},
		{Name: "host_wakeup_max_us", Kind: Instrument, Unit: "µs", Header: "HOST max us", Precision: 0,
			Definition: "Largest host wake-up latency during the measured window: the longest stall the host imposed."},
		{Name: "overlapping_runs", Kind: Instrument, Header: "OTHER RUNS",
			Definition: "Other tlab testbeds seen live on this machine while the cell ran (sampled every second): they share the CPUs, so a non-zero value marks the cell's timings as disturbed. The run's warnings name them."},
		{Name: "server_log_lines", Kind: Instrument, Header: "SRV LOG",
			Definition: "Lines the protocol stacks' servers logged during the cell (for example net/http's \"TLS handshake error ... i/o timeout\" when a handshake is lost): kept in the cell's server.log, never printed over the progress line."},
	} {
		Register(m)
	}
}
