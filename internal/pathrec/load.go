package pathrec

import (
	"fmt"
	"math"
	"sort"
)

// Under load. A path's buffer, and whatever manages it, shows only when
// the path is full: the delay a saturating load adds, how much the buffer
// holds before it drops, whether it marks ECN instead, whether it holds
// the delay near a target as an AQM does. The loaded phase offers each
// direction more than the trains measured and reads this from the probes
// sent meanwhile and from the load's own losses and marks.

// LoadFit is what a direction's load showed.
type LoadFit struct {
	// Ran is false when no load ran (Note says why).
	Ran  bool
	Note string
	// OfferedBps is the load's rate; DeliveredBps what the far end
	// received, over the span of its arrivals.
	OfferedBps, DeliveredBps float64
	// AddedMs is the median delay the load added to the probes once its
	// queue had built (the phase's second half), AddedP95Ms their 95th
	// percentile.
	AddedMs, AddedP95Ms float64
	// LossPct and CEPct are the load's packets lost and marked.
	LossPct, CEPct float64
	// BufferBytes is what the queue held at the added delay and the
	// delivered rate; Filled says the load overflowed it (it dropped or
	// marked), so that is its size, not a lower bound.
	BufferBytes int64
	Filled      bool
	// Saturated says the load exceeded what the direction carried (it
	// delivered less than 90 % of it, or the queue overflowed): only then
	// does the added delay say anything of the buffer.
	Saturated bool
	// Queue is the discipline fitted ("" drop-tail; "fq_codel" or "pie"
	// when the path marked ECN, by how it marked), ECN whether to mark.
	Queue string
	ECN   bool
}

// loadedProbe is a probe that crossed a direction under load: when it
// arrived (the receiver's clock, as the load's arrivals) and its one-way
// delay (ms, with the clocks' offset).
type loadedProbe struct {
	arriveNs int64
	owd      float64
}

// loadFit reads one direction's load: run is the load, probes those that
// crossed the direction during it, in order, and restMs their median
// delay at rest.
func loadFit(run LoadRun, probes []loadedProbe, restMs float64) LoadFit {
	owds := make([]float64, len(probes))
	for i, p := range probes {
		owds[i] = p.owd
	}
	f := LoadFit{OfferedBps: run.OfferedBps}
	switch {
	case run.Refused != "":
		f.Note = "not loaded: " + run.Refused
		return f
	case run.OfferedBps <= 0:
		f.Note = "not loaded"
		return f
	case run.Got.Packets < 2 || len(owds) < 4:
		f.Note = fmt.Sprintf("loaded, but only %d load packets and %d probes came through: nothing to fit", run.Got.Packets, len(owds))
		return f
	}
	f.Ran = true
	if span := float64(run.Got.LastNs - run.Got.FirstNs); span > 0 {
		f.DeliveredBps = float64(run.Got.Bytes+frameOverhead*run.Got.Packets) * 8 * float64(run.Got.Packets-1) / float64(run.Got.Packets) / (span / 1e9)
	}
	if run.Sent > 0 {
		f.LossPct = 100 * math.Max(0, float64(run.Sent-run.Got.Packets)) / float64(run.Sent)
	}
	f.CEPct = 100 * float64(run.Got.CE) / float64(run.Got.Packets)
	second := append([]float64(nil), owds[len(owds)/2:]...)
	sort.Float64s(second)
	f.AddedMs = math.Max(0, median(second)-restMs)
	f.AddedP95Ms = math.Max(0, second[int(0.95*float64(len(second)-1))]-restMs)
	// The buffer holds what the longest waits say (the p95: a full
	// drop-tail queue keeps it there). What waited ahead of a probe is
	// what crossed the path while it waited: the load's bytes that arrived
	// in that time (FIFO), whatever the rate did meanwhile; without the
	// load's arrivals, the wait at the delivered rate.
	f.BufferBytes = int64(f.AddedP95Ms / 1e3 * f.DeliveredBps / 8)
	if len(run.Got.Bins) > 0 {
		var ahead []float64
		wire := float64(LoadSize+frameOverhead) / LoadSize
		for _, p := range probes[len(probes)/2:] {
			wait := math.Max(0, p.owd-restMs)
			ahead = append(ahead, run.Got.BytesBetween(p.arriveNs-int64(wait*1e6), p.arriveNs)*wire)
		}
		sort.Float64s(ahead)
		f.BufferBytes = int64(ahead[int(0.95*float64(len(ahead)-1))])
	}
	// Half a per cent of the load lost or marked: the queue overflowed, or
	// an AQM acted.
	f.Filled = f.LossPct > 0.5 || f.CEPct > 0.5
	f.Saturated = f.Filled || f.DeliveredBps < 0.9*f.OfferedBps
	if run.Got.CE > 0 && f.Filled {
		// A queue that marks ECN is an AQM (a drop-tail queue never
		// marks); which one, by how it marks a load that does not answer
		// the marks (the loaded phase's is paced and deaf to them),
		// LoadFactor (1.5) times what the trains measured, so that a
		// third of it must go:
		//   - PIE marks only while its probability is at most 10 %
		//     (RFC 8033, 5.1) and drops beyond: it drops the third and
		//     marked only while its probability ramped up, well under
		//     1 % of the load, holding the delay near its target;
		//   - CoDel and FQ-CoDel mark an ECT packet instead of dropping
		//     it (RFC 8289, 5; RFC 8290, 4.1) for as long as the buffer
		//     lasts: the marks go on (their rate growing with the control
		//     law's count) and the queue grows toward the buffer.
		// The load, probes and trains share one socket, so a flow queue
		// does not set the probes apart.
		f.ECN = true
		f.Queue = "fq_codel"
		if f.CEPct < 1 && f.LossPct > f.CEPct {
			f.Queue = "pie"
		}
	}
	return f
}

// queueYAML is the replay's queue for this direction, as profile lines
// (none where the load did not saturate the direction).
func (f LoadFit) queueYAML() string {
	switch {
	case !f.Ran || !f.Saturated:
		return ""
	case f.ECN:
		return fmt.Sprintf("  queue:\n    type: %s\n    ecn: true\n", f.Queue)
	}
	// At least two full frames: a buffer smaller than a packet cannot be
	// what delivered the load.
	return fmt.Sprintf("  queue_bytes: %d\n", max(f.BufferBytes, 2*1514))
}

// describe says in a sentence what the load found, for the profile's
// source and tlab record's output.
func (f LoadFit) describe(way string) string {
	if !f.Ran {
		return way + ": " + f.Note
	}
	s := fmt.Sprintf("%s under a load of %.1f Mbit/s: %.1f Mbit/s delivered, %.1f ms added (p95 %.1f ms), %.2f %% of the load lost, %.2f %% CE-marked",
		way, f.OfferedBps/1e6, f.DeliveredBps/1e6, f.AddedMs, f.AddedP95Ms, f.LossPct, f.CEPct)
	switch {
	case !f.Saturated:
		s += "; the direction carried it all, so the load (capped by tlab record's --load-rate or the agent's --max-load) says nothing of its buffer, and the replay keeps the default queue"
	case f.ECN:
		s += fmt.Sprintf("; it marks ECN, so an AQM: %s with ECN, by how it marked a load deaf to its marks (PIE drops once its probability passes 10 %%, CoDel marks on)", f.Queue)
	case f.Filled:
		s += fmt.Sprintf("; it dropped, so its buffer holds %d bytes (the load that crossed while a probe waited its p95 of %.1f ms), drop-tail (assumed: an AQM that drops without marking would look the same)", f.BufferBytes, f.AddedP95Ms)
	default:
		s += fmt.Sprintf("; it neither dropped nor marked, so its buffer holds at least %d bytes (the load that crossed while a probe waited its p95 of %.1f ms: a lower bound, replayed as the buffer)", f.BufferBytes, f.AddedP95Ms)
	}
	return s
}

// LoadSummary is what the loaded phase found, a line a direction (none
// when it did not run).
func (f Fit) LoadSummary() []string {
	if !f.Up.Load.Ran && f.Up.Load.Note == "" && !f.Down.Load.Ran && f.Down.Load.Note == "" {
		return nil
	}
	return []string{f.Up.Load.describe("up"), f.Down.Load.describe("down")}
}
