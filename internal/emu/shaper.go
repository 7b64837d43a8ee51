package emu

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"tlab/internal/untrusted"
)

// Shaper decides when a packet has been fully transmitted onto the link. It
// is a FIFO server: Departure is called in arrival order with the arrival
// time (ns on the link's clock) and the frame size in bytes.
type Shaper interface {
	Departure(now int64, size int) int64
}

// constantRate serves at a fixed bit rate. It keeps the busy-until time as a
// float so that rounding never accumulates into a rate error.
type constantRate struct {
	nsPerByte float64
	busyUntil float64
}

func newConstantRate(bitsPerSecond float64) *constantRate {
	return &constantRate{nsPerByte: 8e9 / bitsPerSecond}
}

func (c *constantRate) Departure(now int64, size int) int64 {
	start := c.startAt(now)
	c.busyUntil = start + float64(size)*c.nsPerByte
	return int64(c.busyUntil + 0.5)
}

// startAt is when a frame offered at now starts: at now if the link was
// idle by then, else when it becomes free. A direction offers the next
// frame at the last one's release, busyUntil rounded to the nanosecond:
// that is no idle gap, and restarting from the rounded time would add up
// to half a nanosecond a frame (0.26 % at 10 Gbit/s with 64-byte frames).
func (c *constantRate) startAt(now int64) float64 {
	if now <= int64(c.busyUntil+0.5) {
		return c.busyUntil
	}
	return float64(now)
}

// departureAfter is Departure for a frame that first holds the medium for
// extraNs more (an 802.11 MAC's failed attempts and backoffs).
func (c *constantRate) departureAfter(now int64, size int, extraNs float64) int64 {
	start := c.startAt(now)
	c.busyUntil = start + extraNs + float64(size)*c.nsPerByte
	return int64(c.busyUntil + 0.5)
}

// TraceOpportunityBytes is what one line of a mahimahi trace delivers.
const TraceOpportunityBytes = 1500

// traceRate follows a mahimahi trace: opportunity i of each period happens at
// trace[i] ms after the period's start, the period being the last entry. An
// opportunity moves up to 1500 bytes of the packets queued at its time; bytes
// an opportunity could have moved while the queue was empty are lost, as in
// mahimahi.
type traceRate struct {
	opsNs    []int64 // opportunity offsets within a period, ns, sorted
	periodNs int64
	shiftNs  int64 // where in the period the trace starts (TracePhase)
	cur      int64 // global index of the opportunity in use, -1 before the first
	left     int   // bytes still free in opportunity cur
}

// ParseTrace reads a mahimahi trace: one integer millisecond timestamp per
// line, non-decreasing, the last one giving the period.
func ParseTrace(name string, r io.Reader) ([]int64, error) {
	var ops []int64
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		ms, err := strconv.ParseInt(t, 10, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("%s:%d: %q is not a millisecond timestamp", name, line, t)
		}
		if ms > maxTraceMs {
			return nil, fmt.Errorf("%s:%d: timestamp %d ms is beyond a trace's longest period (%d ms, about 24 days)", name, line, ms, maxTraceMs)
		}
		if len(ops) > 0 && ms*1e6 < ops[len(ops)-1] {
			return nil, fmt.Errorf("%s:%d: timestamp %d goes back in time", name, line, ms)
		}
		ops = append(ops, ms*1e6)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(ops) == 0 || ops[len(ops)-1] == 0 {
		return nil, fmt.Errorf("%s: a trace needs at least one line and a last timestamp above 0 ms", name)
	}
	return ops, nil
}

// maxTraceMs bounds a trace's timestamps, so that nanoseconds never
// overflow (found by FuzzParseTrace).
const maxTraceMs = 1 << 31

// MaxTraceFile bounds what is read of a rate trace: a line is a
// millisecond timestamp (under 11 bytes), so 256 MiB is over 20 million
// delivery opportunities, an hour at about 70 Gbit/s.
const MaxTraceFile = 256 << 20

// LoadTrace reads a mahimahi trace file.
func LoadTrace(path string) ([]int64, error) {
	f, err := untrusted.Open(path)
	if err != nil {
		return nil, fmt.Errorf("rate trace: %w", err)
	}
	defer f.Close()
	return ParseTrace(path, untrusted.Reader(f, path, MaxTraceFile))
}

// TraceMeanRate is a trace's average rate in bits per second.
func TraceMeanRate(opsNs []int64) float64 {
	return float64(len(opsNs)) * TraceOpportunityBytes * 8 / (float64(opsNs[len(opsNs)-1]) / 1e9)
}

func newTraceRate(opsNs []int64) *traceRate {
	return &traceRate{opsNs: opsNs, periodNs: opsNs[len(opsNs)-1], cur: -1}
}

func (t *traceRate) opTime(i int64) int64 {
	n := int64(len(t.opsNs))
	return (i/n)*t.periodNs + t.opsNs[i%n]
}

// firstAtOrAfter returns the global index of the first opportunity at or
// after time ns.
func (t *traceRate) firstAtOrAfter(ns int64) int64 {
	n := int64(len(t.opsNs))
	period := ns / t.periodNs
	off := ns - period*t.periodNs
	i := int64(sort.Search(len(t.opsNs), func(k int) bool { return t.opsNs[k] >= off }))
	return period*n + i
}

func (t *traceRate) Departure(now int64, size int) int64 {
	// On the trace's own clock, shiftNs into its period at time 0.
	now += t.shiftNs
	remaining := size
	if t.cur >= 0 && t.left > 0 && t.opTime(t.cur) >= now {
		use := min(t.left, remaining)
		t.left -= use
		remaining -= use
		if remaining == 0 {
			return t.opTime(t.cur) - t.shiftNs
		}
	}
	i := max(t.cur+1, t.firstAtOrAfter(now))
	for remaining > 0 {
		use := min(TraceOpportunityBytes, remaining)
		remaining -= use
		t.left = TraceOpportunityBytes - use
		t.cur = i
		i++
	}
	return t.opTime(t.cur) - t.shiftNs
}
