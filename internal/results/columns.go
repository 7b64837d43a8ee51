package results

// RecordColumnDocs define records.csv's columns, for docs/metrics.md.
var RecordColumnDocs = [][2]string{
	{"cell, profile, protocol, rep", "the cell: its identifier, link profile (stack), protocol and repetition"},
	{"(the workload's key), seed", "the cell's workload parameters (for periodic: `interval_ms`, `req_size`, `resp_size`) and emulator seed"},
	{"attempt", "which attempt of the cell the event belongs to: a disturbed cell is run again (`--quality`), and every attempt's events are kept"},
	{"in_summary", "`true` for the events the cell's summary was computed from: the reported attempt's (the summary's `attempt`), past the warm-up, not removed by the outlier rule (`metrics.remove_outliers`, on `delay_ms`). A percentile of `delay_ms` over these rows, an event whose `delay_ms` is empty (it failed or was never sent) counting as beyond any bound, is the summary's"},
	{"seq", "event number in the cell, from 0"},
	{"warmup", "`true` for warm-up events: recorded, kept out of the statistics"},
	{"scheduled_ms", "when the event was due (periodic: `seq × interval`)"},
	{"sent_ms", "when the client started sending it"},
	{"sent_unix_ns", "the same instant by the host's wall clock, in nanoseconds since the UNIX epoch (an integer; a TIMESTAMP in records.parquet), to line records up with a capture's timestamps; empty for an event never sent and for a command stack's events"},
	{"lateness_ms", "`sent_ms − scheduled_ms`: the wait for a protocol that cannot multiplex, or a host stall (the scheduler itself keeps sends within ~0.1 ms)"},
	{"done_ms", "when the whole response had arrived"},
	{"delay_ms", "the **response delay**: `done_ms − sent_ms` (study A); for bulk, the stream's completion"},
	{"first_byte_ms", "from sending to the first response byte"},
	{"req_bytes, resp_bytes", "payload sizes sent and received"},
	{"conn_id", "the connection that carried the event (1, 2, …)"},
	{"new_conn", "the event opened its connection"},
	{"connect_ms", "for a new connection: the TCP handshake (0 for QUIC)"},
	{"handshake_ms", "for a new connection: the TLS handshake, or QUIC's whole handshake"},
	{"resumed, early_data", "the new connection resumed a session; it sent 0-RTT data"},
	{"error", "why the event failed; `not sent: …` for requests a non-multiplexing protocol never got to send before the schedule ended"},
	{"sched_delay_ms", "periodic: the **delay from the schedule**, `done_ms − scheduled_ms`: what a control loop waits since the request was due, including any wait to be sent"},
	{"(the workload's own columns)", "columns a workload adds (see `tlab workloads`)"},
	{"(swept fields)", "one column per swept field, named by its path (`workload.interval`)"},
}
