package emu

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/units"
)

// The queue disciplines are checked against what their RFCs say they do,
// on the virtual clock, without a network: senders that react to drops
// and marks as TCP does (Reno's halving; a scalable, DCTCP-like sender
// for L4S) share one bottleneck Direction, and the test reads each
// packet's sojourn time in the queue.

const (
	simRate     = 10e6 // bit/s at the bottleneck
	simOneWay   = 10 * time.Millisecond
	simDuration = 30 * time.Second
	simSettle   = 10 * time.Second // the statistics skip the start-up
	simFrame    = 1514
)

// simFlow is one sender: bulk (window-limited, reacting to drops and
// marks) or sparse (one frame every gap, unresponsive).
type simFlow struct {
	flow     uint32
	ecn      uint8
	scalable bool          // DCTCP-like: cut by the fraction marked, per RTT
	gap      time.Duration // > 0: sparse
	// state
	cwnd, ssthresh, alpha float64
	inflight              int
	acked, marked         int
	windowEnd, lastCut    int64
	// sojourn times (ns) of this flow's packets after simSettle
	sojourn []float64
	drops   int
}

type simEvent struct {
	at   int64
	flow int
	kind int // 0 ack, 1 loss noticed, 2 sparse send
	mark bool
}

// simulate runs flows through a bottleneck with queue q and returns them.
func simulate(t *testing.T, q QueueConfig, buffer int, flows []*simFlow) []*simFlow {
	t.Helper()
	cfg := DirectionConfig{Rate: units.Bitrate(simRate), Delay: units.Duration(simOneWay), Queue: q, QueuePackets: buffer}
	d, err := NewDirection(cfg, int64(2*simOneWay), 1, "sim/up", nil)
	if err != nil {
		t.Fatal(err)
	}
	txNs := float64(simFrame) * 8e9 / simRate
	type sent struct {
		flow int
		at   int64
	}
	var packets []sent
	var events []simEvent
	push := func(e simEvent) {
		i, _ := slices.BinarySearchFunc(events, e.at, func(x simEvent, at int64) int {
			if x.at <= at {
				return -1
			}
			return 1
		})
		events = slices.Insert(events, i, e)
	}
	emit := func(ref int32, v Verdict) {
		p := packets[ref]
		f := flows[p.flow]
		if v.Drop != Delivered {
			f.drops++
			if f.gap == 0 {
				push(simEvent{at: p.at + int64(3*simOneWay), flow: p.flow, kind: 1})
			}
			return
		}
		if p.at >= int64(simSettle) {
			f.sojourn = append(f.sojourn, float64(v.Release-p.at)-float64(simOneWay)-txNs)
		}
		if f.gap == 0 {
			push(simEvent{at: v.Release + int64(simOneWay), flow: p.flow, kind: 0, mark: v.Mark})
		}
	}
	send := func(i int, now int64) {
		f := flows[i]
		packets = append(packets, sent{flow: i, at: now})
		f.inflight++
		d.Offer(now, Frame{Size: simFrame, Flow: f.flow, ECN: f.ecn, Ref: int32(len(packets) - 1)}, emit)
	}
	fill := func(i int, now int64) {
		f := flows[i]
		for f.gap == 0 && float64(f.inflight) < f.cwnd {
			send(i, now)
		}
	}
	for i, f := range flows {
		f.cwnd, f.ssthresh = 10, math.Inf(1)
		if f.gap > 0 {
			push(simEvent{at: 0, flow: i, kind: 2})
		} else {
			fill(i, 0)
		}
	}
	rtt := int64(2 * simOneWay)
	for len(events) > 0 || d.NextTransmit() != math.MaxInt64 {
		next := d.NextTransmit()
		if len(events) == 0 || next < events[0].at {
			d.Transmit(next, emit)
			continue
		}
		e := events[0]
		events = events[1:]
		if e.at > int64(simDuration) {
			break
		}
		d.Transmit(e.at, emit)
		f := flows[e.flow]
		switch e.kind {
		case 2:
			send(e.flow, e.at)
			push(simEvent{at: e.at + int64(f.gap), flow: e.flow, kind: 2})
			continue
		case 1: // a loss: Reno halves once per RTT
			f.inflight--
			if e.at-f.lastCut > rtt {
				f.ssthresh = max(f.cwnd/2, 2)
				f.cwnd, f.lastCut = f.ssthresh, e.at
			}
		case 0:
			f.inflight--
			f.acked++
			if e.mark {
				f.marked++
			}
			switch {
			case f.scalable:
				// DCTCP: once per RTT, cut by half the marked fraction's
				// moving average.
				if e.at >= f.windowEnd {
					frac := float64(f.marked) / float64(max(f.acked, 1))
					f.alpha = (1-1.0/16)*f.alpha + frac/16
					if f.marked > 0 {
						f.cwnd = max(f.cwnd*(1-f.alpha/2), 2)
						f.ssthresh = f.cwnd
					}
					f.acked, f.marked, f.windowEnd = 0, 0, e.at+rtt
				}
			case e.mark && e.at-f.lastCut > rtt: // classic ECN: as a loss
				f.ssthresh = max(f.cwnd/2, 2)
				f.cwnd, f.lastCut = f.ssthresh, e.at
			}
			if !e.mark || f.scalable {
				if f.cwnd < f.ssthresh {
					f.cwnd++
				} else {
					f.cwnd += 1 / f.cwnd
				}
			}
		}
		fill(e.flow, e.at)
	}
	return flows
}

func medianMs(ns []float64) float64 {
	if len(ns) == 0 {
		return math.NaN()
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	return s[len(s)/2] / 1e6
}

func bulk(flow uint32, ecn uint8) *simFlow { return &simFlow{flow: flow, ecn: ecn} }

// TestCoDelKeepsTheStandingQueueNearTarget: under a saturating Reno flow,
// drop-tail's standing queue fills its buffer (bufferbloat), CoDel's
// settles near its 5 ms target (RFC 8289 section 3), with drops or, for
// an ECN-capable flow, marks.
func TestCoDelKeepsTheStandingQueueNearTarget(t *testing.T) {
	const buffer = 200 // 242 ms at 10 Mbit/s
	tail := simulate(t, QueueConfig{}, buffer, []*simFlow{bulk(1, NotECT)})[0]
	codel := simulate(t, QueueConfig{Type: CoDelName}, buffer, []*simFlow{bulk(1, NotECT)})[0]
	marked := simulate(t, QueueConfig{Type: CoDelName, ECN: true}, buffer, []*simFlow{bulk(1, ECT0)})[0]
	t.Logf("median sojourn: drop-tail %.1f ms, CoDel %.1f ms (%d drops), CoDel with ECN %.1f ms (%d drops)",
		medianMs(tail.sojourn), medianMs(codel.sojourn), codel.drops, medianMs(marked.sojourn), marked.drops)
	if m := medianMs(tail.sojourn); m < 100 {
		t.Errorf("drop-tail's standing queue %.1f ms: a 242 ms buffer under a Reno flow fills far beyond 100 ms", m)
	}
	for name, f := range map[string]*simFlow{"CoDel": codel, "CoDel with ECN": marked} {
		if m := medianMs(f.sojourn); m < 1 || m > 15 {
			t.Errorf("%s: median sojourn %.1f ms, want near the 5 ms target (1–15 ms)", name, m)
		}
	}
	if marked.drops != 0 {
		t.Errorf("CoDel with ECN dropped %d packets of an ECN-capable flow", marked.drops)
	}
}

// TestFQCoDelIsolatesASparseFlow: a sparse flow beside a bulk one waits,
// under FQ-CoDel, about the one frame on the wire; under drop-tail the
// bulk flow's whole queue (RFC 8290 section 1.3).
func TestFQCoDelIsolatesASparseFlow(t *testing.T) {
	const buffer = 200
	sparse := func() *simFlow { return &simFlow{flow: 99, gap: 10 * time.Millisecond} }
	tail := simulate(t, QueueConfig{}, buffer, []*simFlow{bulk(1, NotECT), sparse()})
	fq := simulate(t, QueueConfig{Type: FQCoDelName}, buffer, []*simFlow{bulk(1, NotECT), sparse()})
	txMs := simFrame * 8e3 / simRate
	t.Logf("sparse flow's median sojourn: drop-tail %.2f ms, FQ-CoDel %.2f ms (one frame's transmission %.2f ms); bulk under FQ-CoDel %.1f ms",
		medianMs(tail[1].sojourn), medianMs(fq[1].sojourn), txMs, medianMs(fq[0].sojourn))
	if m := medianMs(fq[1].sojourn); m > 1.5*txMs {
		t.Errorf("FQ-CoDel: the sparse flow waits %.2f ms, more than the frame on the wire (%.2f ms) allows", m, txMs)
	}
	if m := medianMs(tail[1].sojourn); m < 50 {
		t.Errorf("drop-tail: the sparse flow waits only %.2f ms behind a bulk flow", m)
	}
	if fq[1].drops != 0 {
		t.Errorf("FQ-CoDel dropped %d packets of the sparse flow", fq[1].drops)
	}
}

// TestPIEKeepsTheQueueNearTarget: PIE's controller holds a Reno flow's
// queueing delay near its 15 ms target (RFC 8033 section 4).
func TestPIEKeepsTheQueueNearTarget(t *testing.T) {
	f := simulate(t, QueueConfig{Type: PIEName}, 200, []*simFlow{bulk(1, NotECT)})[0]
	t.Logf("PIE: median sojourn %.1f ms, %d drops", medianMs(f.sojourn), f.drops)
	if m := medianMs(f.sojourn); m < 5 || m > 30 {
		t.Errorf("PIE: median sojourn %.1f ms, want near the 15 ms target (5–30 ms)", m)
	}
}

// TestDualPI2KeepsL4SNearOneMillisecond: a scalable flow marked by
// DualPI2's L queue keeps its queueing delay near the 1 ms step, beside
// a classic flow whose queue PI2 holds near 15 ms (RFC 9332 section 1).
func TestDualPI2KeepsL4SNearOneMillisecond(t *testing.T) {
	scalable := &simFlow{flow: 1, ecn: ECT1, scalable: true}
	classic := bulk(2, NotECT)
	simulate(t, QueueConfig{Type: DualPI2Name}, 400, []*simFlow{scalable, classic})
	t.Logf("DualPI2: scalable flow's median sojourn %.2f ms (%d drops), classic %.1f ms (%d drops)",
		medianMs(scalable.sojourn), scalable.drops, medianMs(classic.sojourn), classic.drops)
	if m := medianMs(scalable.sojourn); m > 2.5 {
		t.Errorf("the scalable flow waits %.2f ms, want near the 1 ms step (at most 2.5 ms)", m)
	}
	if scalable.drops != 0 {
		t.Errorf("the L queue dropped %d packets (it marks)", scalable.drops)
	}
	if m := medianMs(classic.sojourn); m < 3 || m > 40 {
		t.Errorf("the classic flow waits %.1f ms, want near the 15 ms target (3–40 ms)", m)
	}
}

// TestAnUnresponsiveL4SSenderCannotTakeTheLink: an ECT(1) sender that
// ignores marks, at twice the link rate, beside a Reno flow. RFC 9332
// section 4.2.3: in overload the coupled AQM drops L4S packets as it
// drops classic ones, so the L queue's delay stays bounded near the
// classic target rather than filling the buffer, and the Reno flow keeps
// a share of the link (as FQ-CoDel and PIE give it). The buffer is 2000
// packets (2.4 s at 10 Mbit/s): without overload handling the L queue
// sat at a median of 480 ms and the Reno flow got nothing.
func TestAnUnresponsiveL4SSenderCannotTakeTheLink(t *testing.T) {
	gap := time.Duration(float64(simFrame) * 8e9 / simRate / 2)
	for _, name := range []string{DualPI2Name, FQCoDelName, PIEName} {
		flood := &simFlow{flow: 1, ecn: ECT1, gap: gap}
		reno := bulk(2, NotECT)
		simulate(t, QueueConfig{Type: name}, 2000, []*simFlow{flood, reno})
		// Reno's delivered packets after the settling time, as a share of
		// what the link carried then.
		linkPackets := float64(simDuration-simSettle) * simRate / 8e9 / simFrame
		share := float64(len(reno.sojourn)) / linkPackets
		t.Logf("%s: unresponsive L4S median sojourn %.1f ms; Reno median %.1f ms, %.1f %% of the link", name, medianMs(flood.sojourn), medianMs(reno.sojourn), share*100)
		if name != DualPI2Name {
			continue
		}
		if m := medianMs(flood.sojourn); !(m < 60) {
			t.Errorf("DualPI2 in overload: the L queue's median sojourn %.1f ms, want it bounded near the classic target (under 60 ms)", m)
		}
		if share < 0.005 {
			t.Errorf("DualPI2 in overload: the Reno flow got %.2f %% of the link, want a share", share*100)
		}
	}
}

// TestQueueDisciplinesAreSeeded: the same seed gives the same drops and
// marks, whatever the discipline.
func TestQueueDisciplinesAreSeeded(t *testing.T) {
	for _, name := range QdiscNames() {
		a := simulate(t, QueueConfig{Type: name}, 100, []*simFlow{bulk(1, ECT0), bulk(2, ECT1)})
		b := simulate(t, QueueConfig{Type: name}, 100, []*simFlow{bulk(1, ECT0), bulk(2, ECT1)})
		if a[0].drops != b[0].drops || !slices.Equal(a[0].sojourn, b[0].sojourn) || !slices.Equal(a[1].sojourn, b[1].sojourn) {
			t.Errorf("%s: two runs with one seed differ", name)
		}
	}
}

// TestGuideListsEveryQueueDiscipline: the guide's table of disciplines is
// the registry's.
func TestGuideListsEveryQueueDiscipline(t *testing.T) {
	b, err := os.ReadFile("../../docs/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\| .* \\| (RFC \\d+|the classic router queue.*) \\|$").FindAllStringSubmatch(string(b), -1)
	var listed []string
	for _, r := range rows {
		listed = append(listed, r[1])
	}
	slices.Sort(listed)
	if !slices.Equal(listed, QdiscNames()) {
		t.Errorf("docs/guide.md lists the disciplines %v; the registry has %v", listed, QdiscNames())
	}
	for _, k := range QdiscKinds() {
		if rfc := regexp.MustCompile(`RFC \d+`).FindString(k.Source); rfc != "" && !strings.Contains(string(b), "| "+rfc+" |") {
			t.Errorf("%s: its source %s is not in the guide's table", k.Name, rfc)
		}
	}
}

// TestUpdateClock: the controller runs once per period boundary passed,
// in order, at the boundary's time; the first event only starts the
// clock; after a long idle spell only the last thousand boundaries run.
func TestUpdateClock(t *testing.T) {
	c := updateClock{period: 10}
	var at []int64
	rec := func(t int64) { at = append(at, t) }
	c.due(5, rec)  // starts: next boundary 15
	c.due(14, rec) // none
	c.due(36, rec) // 15, 25, 35
	if !slices.Equal(at, []int64{15, 25, 35}) {
		t.Fatalf("boundaries %v", at)
	}
	at = nil
	c.due(35+10*5000, rec)
	if len(at) != 1001 || at[len(at)-1] != 35+10*5000 || at[1]-at[0] != 10 {
		t.Errorf("after an idle spell: %d updates, last at %d", len(at), at[len(at)-1])
	}
}
