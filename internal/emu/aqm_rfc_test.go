package emu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"tlab/internal/units"
)

// The disciplines' mechanisms, on scripted arrivals and dequeues, against
// their RFCs' own pseudocode and equations: when CoDel drops, what
// probability PIE computes and how it spreads its drops, in which order
// FQ-CoDel serves and what it drops, how DualPI2 couples its queues. The
// numbers in these tests are the RFCs' (quoted), not the code's constants.

const ms = int64(time.Millisecond)

func newDiscipline(t *testing.T, name string, c QueueConfig, limit Backlog, seed uint64) Qdisc {
	t.Helper()
	k, ok := qdiscKinds[name]
	if !ok {
		t.Fatalf("no discipline %s", name)
	}
	return k.New(c, limit, rand.New(rand.NewPCG(seed, 1)))
}

// TestCoDelControlLaw: RFC 8289 section 5.5 — once the sojourn time has
// stayed above target (5 ms) for an interval (100 ms), CoDel drops, and
// then "the next drop time is ... interval / sqrt(count)" after the
// previous one, count being the drops so far in this dropping state. A
// standing queue (every packet waited 50 ms) is served a packet per
// millisecond; the gaps between drops must be 100/√1, 100/√2, 100/√3 ...
// ms, each to the millisecond the dequeues allow.
func TestCoDelControlLaw(t *testing.T) {
	q := newDiscipline(t, CoDelName, QueueConfig{}, Backlog{}, 1)
	var drops []int64
	now := int64(0)
	drop := func(Packet) { drops = append(drops, now) }
	// Keep the queue standing: every dequeue finds packets that arrived
	// 50 ms before.
	for step := int64(0); step < 1500; step++ {
		now = step * ms
		for q.Len() < 20 {
			q.Enqueue(now, Packet{Arrived: now - 50*ms, Size: 1514}, Backlog{}, func(Packet) {})
		}
		q.Dequeue(now, drop)
	}
	if len(drops) < 8 {
		t.Fatalf("%d drops in 1.5 s of a standing queue", len(drops))
	}
	// The first: an interval after the sojourn time first exceeded target.
	if drops[0] != 100*ms {
		t.Errorf("first drop at %v, want 100 ms (one interval above target)", time.Duration(drops[0]))
	}
	// Each drop time is the previous one plus interval/√count; the
	// dequeues, a millisecond apart, find it at most 1 ms late, and the
	// lateness does not accumulate (the law runs from the drop time
	// due, not the dequeue's).
	due := float64(drops[0])
	for k := 1; k < 8; k++ {
		due += float64(100*ms) / math.Sqrt(float64(k))
		if got := float64(drops[k]); got < due || got > due+float64(ms) {
			t.Errorf("drop %d at %.2f ms, want within 1 ms after %.2f ms (interval/√%d)", k+1, got/1e6, due/1e6, k)
		}
	}
}

// TestCoDelLeavesDroppingBelowTarget: RFC 8289 — "if the sojourn time
// goes below target ... the dropping state is exited"; a packet that
// waited less than target is never dropped.
func TestCoDelLeavesDroppingBelowTarget(t *testing.T) {
	q := newDiscipline(t, CoDelName, QueueConfig{}, Backlog{}, 1)
	dropped := 0
	for step := int64(0); step < 400; step++ {
		now := step * ms
		wait := 50 * ms
		if step >= 200 {
			wait = 4 * ms // below the 5 ms target from here on
		}
		for q.Len() < 20 {
			q.Enqueue(now, Packet{Arrived: now - wait, Size: 1514}, Backlog{}, func(Packet) {})
		}
		q.Dequeue(now, func(p Packet) {
			if now-p.Arrived < 5*ms {
				dropped++
			}
		})
	}
	if dropped != 0 {
		t.Errorf("%d packets dropped after the sojourn time fell below target", dropped)
	}
}

// pieAt builds a PIE whose controller never runs on its own (an update
// period of an hour), so that a test can set its state and call the
// update itself.
func pieAt(t *testing.T, c QueueConfig) *pie {
	t.Helper()
	c.Interval = units.Duration(time.Hour)
	return newDiscipline(t, PIEName, c, Backlog{}, 3).(*pie)
}

// TestPIEDropProbability: RFC 8033 section 4.2 and 5.1 —
//
//	p = alpha * (qdelay - QDELAY_REF) + beta * (qdelay - qdelay_old)
//
// with alpha = 0.125 Hz and beta = 1.25 Hz (section 5.1: "alpha is
// 0.125 and beta is 1.25"), QDELAY_REF = 15 ms; "if drop_prob_ <
// 0.000001: p /= 2048 ... else if drop_prob_ < 0.1: p /= 2", capped at
// 0.02 per update when drop_prob_ >= 0.1, and a decay of 2 % when the
// queue has been empty for two updates.
func TestPIEDropProbability(t *testing.T) {
	for _, c := range []struct {
		name              string
		prob              float64
		qdelay, qdelayOld int64
		want              float64
	}{
		// Above 0.1 no auto-tuning: alpha's part alone (10 ms over target).
		{"alpha", 0.5, 25 * ms, 25 * ms, 0.5 + 0.125*0.010},
		// beta's part alone (at target, 4 ms more than last time).
		{"beta", 0.5, 15 * ms, 11 * ms, 0.5 + 1.25*0.004},
		// Auto-tuning, one band each.
		{"tune /2", 0.05, 25 * ms, 25 * ms, 0.05 + 0.125*0.010/2},
		{"tune /8", 0.005, 25 * ms, 25 * ms, 0.005 + 0.125*0.010/8},
		{"tune /32", 0.0005, 25 * ms, 25 * ms, 0.0005 + 0.125*0.010/32},
		{"tune /128", 0.00005, 25 * ms, 25 * ms, 0.00005 + 0.125*0.010/128},
		{"tune /512", 0.000005, 25 * ms, 25 * ms, 0.000005 + 0.125*0.010/512},
		{"tune /2048", 0, 25 * ms, 25 * ms, 0.125 * 0.010 / 2048},
		// A large step is capped at 0.02 once the probability is 10 %.
		{"cap", 0.3, 215 * ms, 215 * ms, 0.3 + 0.02},
		// An idle queue decays by 2 % (after alpha's pull down).
		{"decay", 0.5, 0, 0, (0.5 - 0.125*0.015) * 0.98},
	} {
		p := pieAt(t, QueueConfig{})
		p.prob, p.qdelay, p.qdelayOld = c.prob, c.qdelay, c.qdelayOld
		p.calculateAt(0)
		if !(math.Abs(p.prob-c.want) <= 1e-12) {
			t.Errorf("%s: drop_prob %.9f, want %.9f", c.name, p.prob, c.want)
		}
	}
	if p := pieAt(t, QueueConfig{}); p.target != 15*ms {
		t.Errorf("QDELAY_REF %v, want RFC 8033's 15 ms", time.Duration(p.target))
	}
}

// TestPIEDerandomisedDrops: RFC 8033 section 5.3 (derandomisation) —
// "if accu_prob < 0.85 ... do not drop; if accu_prob >= 8.5 ... drop",
// accu_prob growing by drop_prob each arrival and reset at each drop. At
// a fixed 10 %, two drops are at least 9 arrivals apart (0.9 ≥ 0.85) and
// at most 85 (8.5). After a drop, 8 arrivals pass untouched and each
// later one is dropped with probability 0.1: a mean gap of 8 + 1/0.1 =
// 18 arrivals, a drop rate of 1/18.
func TestPIEDerandomisedDrops(t *testing.T) {
	p := pieAt(t, QueueConfig{})
	p.prob, p.burst, p.qdelayOld = 0.1, 0, 30*ms
	last, drops, minGap, maxGap := -1, 0, 1<<30, 0
	big := Backlog{Packets: 100, Bytes: 100 * 1514}
	for i := range 20000 {
		dropped := false
		p.Enqueue(0, Packet{Size: 1514}, big, func(Packet) { dropped = true })
		p.q = fifo{} // keep the buffer from filling
		if dropped {
			if last >= 0 {
				minGap, maxGap = min(minGap, i-last), max(maxGap, i-last)
			}
			last = i
			drops++
		}
	}
	if minGap < 9 || maxGap > 85 {
		t.Errorf("gaps between drops from %d to %d arrivals, want 9 to 85", minGap, maxGap)
	}
	if rate := float64(drops) / 20000; !(math.Abs(rate-1.0/18) <= 0.005) {
		t.Errorf("dropped %.4f of arrivals at drop_prob 0.1, want 1/18 = 0.0556", rate)
	}
}

// TestPIEBurstAllowance: RFC 8033 section 4.4 — "MAX_BURST = 150 ms":
// while burst_allowance > 0 nothing is dropped early, and each update
// takes T_UPDATE (15 ms) off it; a queue that stays long drops once the
// allowance is spent, not before.
func TestPIEBurstAllowance(t *testing.T) {
	q := newDiscipline(t, PIEName, QueueConfig{}, Backlog{}, 5).(*pie)
	// A queue already 200 ms long with a high drop probability: only the
	// allowance holds the drops back.
	q.prob, q.qdelay, q.qdelayOld = 0.5, 200*ms, 200*ms
	firstDrop := int64(-1)
	big := Backlog{Packets: 100, Bytes: 100 * 1514}
	for now := int64(0); now < 400*ms && firstDrop < 0; now += ms / 4 {
		q.Enqueue(now, Packet{Arrived: now, Size: 1514}, big, func(Packet) { firstDrop = now })
		q.q = fifo{} // the test sets the queueing delay; the buffer never fills
	}
	// The clock starts at the first event; ten updates of 15 ms spend the
	// allowance.
	if firstDrop < 150*ms || firstDrop > 160*ms {
		t.Errorf("first early drop at %v, want soon after the 150 ms burst allowance", time.Duration(firstDrop))
	}
}

// constSource makes a rand.Rand whose Float64 is always about v: a coin
// that always (v = 0) or never (v ≈ 1) comes up "drop".
type constSource uint64

func (c constSource) Uint64() uint64 { return uint64(c) }

// TestPIEDerandomisationBounds: with a coin that always says "drop", PIE
// still waits until accu_prob reaches 0.85 (every 9th arrival at 10 %);
// with one that never does, it drops anyway once accu_prob reaches 8.5
// (every 85th).
func TestPIEDerandomisationBounds(t *testing.T) {
	for _, c := range []struct {
		coin constSource
		gap  int
	}{{0, 9}, {math.MaxUint64, 85}} {
		p := pieAt(t, QueueConfig{})
		p.rng = rand.New(c.coin)
		p.prob, p.burst, p.qdelayOld = 0.1, 0, 30*ms
		var at []int
		for i := range 400 {
			p.Enqueue(0, Packet{Size: 1514}, Backlog{Packets: 100, Bytes: 100 * 1514}, func(Packet) { at = append(at, i) })
			p.q = fifo{}
		}
		for k := 1; k < len(at); k++ {
			if at[k]-at[k-1] != c.gap {
				t.Errorf("coin %x: drops at %v, want every %d arrivals", uint64(c.coin), at, c.gap)
				break
			}
		}
		if len(at) < 3 {
			t.Errorf("coin %x: drops at %v", uint64(c.coin), at)
		}
	}
}

// fqServe dequeues one packet at now and returns its flow (0 when none).
func fqServe(q Qdisc, now int64) uint32 {
	p, ok := q.Dequeue(now, func(Packet) {})
	if !ok {
		return 0
	}
	return p.Flow
}

// TestFQCoDelServesNewFlowsFirst: RFC 8290 section 4.2 — "the scheduler
// first looks at the list of new queues"; a queue that has used its
// quantum "is moved to the end of the list of old queues". A bulk flow
// (1) has spent its first quantum when a sparse flow (2) sends: 2's
// packet leaves next, ahead of the eight of 1's that wait.
func TestFQCoDelServesNewFlowsFirst(t *testing.T) {
	q := newDiscipline(t, FQCoDelName, QueueConfig{}, Backlog{}, 1)
	for range 10 {
		q.Enqueue(0, Packet{Flow: 1, Size: 1514}, Backlog{}, func(Packet) {})
	}
	if f := fqServe(q, 0); f != 1 {
		t.Fatalf("first dequeue from flow %d", f)
	}
	q.Enqueue(ms, Packet{Arrived: ms, Flow: 2, Size: 100}, Backlog{}, func(Packet) {})
	if f := fqServe(q, ms); f != 2 {
		t.Errorf("after the sparse flow's arrival the next packet is flow %d's, want 2's (new flows first)", f)
	}
}

// TestFQCoDelGuardsTheOldList: RFC 8290 section 4.2 — a queue from the
// list of new queues that the scheduler finds empty "is moved to the end
// of the list of old queues" rather than removed (when the old list is
// not empty), so that a flow sending one packet at a time cannot come
// back as new each time and starve the old list. With a quantum of three
// frames: flow 2's first packet goes first; when the scheduler next finds
// its queue empty it joins the old list behind flow 1; its second packet
// then waits for flow 1's turn.
func TestFQCoDelGuardsTheOldList(t *testing.T) {
	q := newDiscipline(t, FQCoDelName, QueueConfig{Quantum: 3 * 1514}, Backlog{}, 1)
	for range 10 {
		q.Enqueue(0, Packet{Flow: 1, Size: 1514}, Backlog{}, func(Packet) {})
	}
	for range 4 { // flow 1 spends its quantum and moves to the old list
		fqServe(q, 0)
	}
	q.Enqueue(ms, Packet{Arrived: ms, Flow: 2, Size: 100}, Backlog{}, func(Packet) {})
	if f := fqServe(q, ms); f != 2 {
		t.Fatalf("flow %d first, want the new flow 2", f)
	}
	if f := fqServe(q, ms); f != 1 { // finds flow 2 empty on the way
		t.Fatalf("flow %d, want 1", f)
	}
	q.Enqueue(2*ms, Packet{Arrived: 2 * ms, Flow: 2, Size: 100}, Backlog{}, func(Packet) {})
	if f := fqServe(q, 2*ms); f != 1 {
		t.Errorf("flow %d served, want the old flow 1: flow 2 went to the old list when found empty, not back to new", f)
	}
}

// TestFQCoDelDropsFromTheFattestFlow: RFC 8290 section 4.1 — when the
// buffer is full, "the packet is dropped from the head of the queue
// with the largest current byte count", not the arrival.
func TestFQCoDelDropsFromTheFattestFlow(t *testing.T) {
	q := newDiscipline(t, FQCoDelName, QueueConfig{}, Backlog{Packets: 10}, 1)
	n := 0
	for i := range 8 {
		q.Enqueue(0, Packet{Flow: 1, Size: 1514, Ref: int32(i)}, Backlog{Packets: n}, func(Packet) { t.Fatal("dropped before the buffer was full") })
		n++
	}
	for range 2 {
		q.Enqueue(0, Packet{Flow: 2, Size: 1514}, Backlog{Packets: n}, func(Packet) { t.Fatal("dropped before the buffer was full") })
		n++
	}
	var dropped []Packet
	q.Enqueue(0, Packet{Flow: 2, Size: 1514, Ref: 99}, Backlog{Packets: n}, func(p Packet) { dropped = append(dropped, p) })
	if len(dropped) != 1 || dropped[0].Flow != 1 || dropped[0].Ref != 0 {
		t.Errorf("dropped %+v, want the head of flow 1 (8 packets against 3)", dropped)
	}
	if q.Len() != 10 {
		t.Errorf("%d packets queued, want 10 (the arrival kept)", q.Len())
	}
}

// dualAt builds a DualPI2 whose controller never runs on its own, with p'
// set to base.
func dualAt(t *testing.T, c QueueConfig, base float64, seed uint64) *dualPI2 {
	t.Helper()
	c.Interval = units.Duration(time.Hour)
	d := newDiscipline(t, DualPI2Name, c, Backlog{}, seed).(*dualPI2)
	d.Enqueue(0, Packet{}, Backlog{}, func(Packet) {}) // starts the clock
	d.l, d.c = fifo{}, fifo{}
	d.base = base
	return d
}

// fractions serves n packets of one kind through d, each having waited
// wait, and returns the shares marked and dropped.
func fractions(d *dualPI2, ecn uint8, wait int64, n int) (marked, dropped float64) {
	m, x := 0, 0
	now := ms
	for range n {
		d.Enqueue(now, Packet{Arrived: now - wait, Size: 1514, ECN: ecn}, Backlog{}, func(Packet) {})
		p, ok := d.Dequeue(now, func(Packet) { x++ })
		if ok && p.Mark {
			m++
		}
	}
	return float64(m) / float64(n), float64(x) / float64(n)
}

// TestDualPI2Coupling: RFC 9332 section 2.4 — the L4S queue is marked
// with p_CL = k·p' (k = 2, "the coupling factor ... k = 2"), the classic
// queue dropped with p_C = (p')², the square that makes a classic flow's
// rate match a scalable one's. At p' = 0.2: 40 % of L4S packets marked,
// 4 % of non-ECN classic packets dropped (and, with ecn, 4 % of ECT(0)
// marked instead).
func TestDualPI2Coupling(t *testing.T) {
	const n = 40000
	if m, x := fractions(dualAt(t, QueueConfig{}, 0.2, 1), ECT1, 0, n); !(math.Abs(m-0.4) <= 0.01) || x != 0 {
		t.Errorf("L4S at p' 0.2: %.3f marked, %.3f dropped; want 0.4 (k·p'), none dropped", m, x)
	}
	if m, x := fractions(dualAt(t, QueueConfig{}, 0.2, 2), NotECT, 0, n); !(math.Abs(x-0.04) <= 0.005) || m != 0 {
		t.Errorf("classic at p' 0.2: %.4f dropped, %.4f marked; want 0.04 (p'²)", x, m)
	}
	if m, x := fractions(dualAt(t, QueueConfig{ECN: true}, 0.2, 3), ECT0, 0, n); !(math.Abs(m-0.04) <= 0.005) || x != 0 {
		t.Errorf("classic ECT(0) with ecn at p' 0.2: %.4f marked, %.4f dropped; want 0.04 marked", m, x)
	}
}

// TestDualPI2Step: the L4S queue's native AQM marks every packet that
// waited at least the step threshold (1 ms, Linux's dualpi2 default
// step_thresh, the step of RFC 9332 section 2.5.2's example), whatever
// p'; below it, none at p' = 0.
func TestDualPI2Step(t *testing.T) {
	if m, _ := fractions(dualAt(t, QueueConfig{}, 0, 1), ECT1, ms, 1000); m != 1 {
		t.Errorf("L4S packets that waited 1 ms: %.3f marked, want all", m)
	}
	if m, _ := fractions(dualAt(t, QueueConfig{}, 0, 1), ECT1, 9*ms/10, 1000); m != 0 {
		t.Errorf("L4S packets that waited 0.9 ms at p' 0: %.3f marked, want none", m)
	}
}

// TestDualPI2PIUpdate: RFC 9332 appendix A.1 —
//
//	p' = p' + alpha * (curq - target) + beta * (curq - prevq)
//
// with alpha = 0.1·Tupdate/RTT_max² = 0.16 Hz (Tupdate 16 ms, RTT_max
// 100 ms), beta 3.2 Hz (Linux's default; the appendix's 0.3/RTT_max
// gives 3) and target 15 ms.
func TestDualPI2PIUpdate(t *testing.T) {
	d := dualAt(t, QueueConfig{}, 0.1, 1)
	d.c.push(Packet{Arrived: -25 * ms, Size: 1514})
	d.qdelayOld = 20 * ms
	d.controlAt(0)
	want := 0.1 + 0.16*(0.025-0.015) + 3.2*(0.025-0.020)
	if !(math.Abs(d.base-want) <= 1e-12) {
		t.Errorf("p' %.6f, want %.6f", d.base, want)
	}
	if d.target != 15*ms {
		t.Errorf("target %v, want 15 ms", time.Duration(d.target))
	}
}

// TestDualPI2TimeShiftedFIFO: RFC 9332 section 4.2.2's time-shifted FIFO
// — the L queue's head is served unless the classic head has waited
// tshift (2 × target = 30 ms, Linux's default) longer: a scheduler that
// always served L first could starve the classic queue.
func TestDualPI2TimeShiftedFIFO(t *testing.T) {
	for _, c := range []struct {
		classicOlderBy int64
		want           uint32
	}{{10 * ms, 1}, {40 * ms, 2}} {
		d := dualAt(t, QueueConfig{}, 0, 1)
		now := 100 * ms
		d.Enqueue(now, Packet{Arrived: now - 5*ms, Flow: 1, ECN: ECT1, Size: 1514}, Backlog{}, func(Packet) {})
		d.Enqueue(now, Packet{Arrived: now - 5*ms - c.classicOlderBy, Flow: 2, Size: 1514}, Backlog{}, func(Packet) {})
		if p, _ := d.Dequeue(now, func(Packet) {}); p.Flow != c.want {
			t.Errorf("classic head %v older: served flow %d, want %d", time.Duration(c.classicOlderBy), p.Flow, c.want)
		}
	}
}

// TestDualPI2Overload: RFC 9332 section 4.2.3 — once the coupled
// probability saturates (k·p' ≥ 1), marking no longer controls the L4S
// queue: its packets are dropped with the classic probability (p')² and
// marked otherwise, and classic ECN-capable packets are dropped rather
// than marked, so that an unresponsive sender cannot take the link. At
// p' = 0.8: 64 % of L4S packets and of ECT(0) packets dropped.
func TestDualPI2Overload(t *testing.T) {
	const n = 40000
	if m, x := fractions(dualAt(t, QueueConfig{}, 0.8, 1), ECT1, 0, n); !(math.Abs(x-0.64) > 0.01 || math.Abs(m-(1-x)) <= 1e-9) {
		t.Errorf("L4S at p' 0.8 (overload): %.3f dropped, %.3f marked; want 0.64 dropped, the rest marked", x, m)
	}
	if m, x := fractions(dualAt(t, QueueConfig{ECN: true}, 0.8, 2), ECT0, 0, n); !(math.Abs(x-0.64) <= 0.01) || m != 0 {
		t.Errorf("classic ECT(0) at p' 0.8 (overload): %.3f dropped, %.3f marked; want 0.64 dropped, none marked", x, m)
	}
}

// TestCoDelTarget: RFC 8289 section 4.3 — "target = 5 ms": a queue whose
// packets wait about 7 ms for longer than an interval is dropped from; one
// whose packets wait about 3 ms never is.
func TestCoDelTarget(t *testing.T) {
	for _, c := range []struct {
		wait  int64
		drops bool
	}{{ms, false}, {5 * ms, true}} {
		q := newDiscipline(t, CoDelName, QueueConfig{}, Backlog{}, 1)
		n := 0
		for step := int64(0); step < 500; step++ {
			now := step * ms
			for q.Len() < 3 { // each packet waits 2 ms more in the queue
				q.Enqueue(now, Packet{Arrived: now - c.wait, Size: 1514}, Backlog{}, func(Packet) {})
			}
			q.Dequeue(now, func(Packet) { n++ })
		}
		if (n > 0) != c.drops {
			t.Errorf("packets waiting about %v: %d drops, want drops %v", time.Duration(c.wait+2*ms), n, c.drops)
		}
	}
}

// TestCoDelRemembersARecentDropRate: RFC 8289 section 5.4 — on entering
// the dropping state again soon after leaving it, "delta = count -
// lastcount; if (delta > 1 && now - drop_next < 16 * interval) count =
// delta", so the drops resume near the rate that last controlled the
// queue: the gap after the first drop is interval/√delta, not interval.
func TestCoDelRemembersARecentDropRate(t *testing.T) {
	q := newDiscipline(t, CoDelName, QueueConfig{}, Backlog{}, 1).(*codel)
	var drops []int64
	now := int64(0)
	phase1 := 0
	for step := int64(0); step < 1000; step++ {
		now = step * ms
		wait := 50 * ms
		switch {
		case step == 600 || step == 650:
			q.q = fifo{} // the test sets the sojourn times from here
		case step == 601:
			phase1 = len(drops)
		}
		if step >= 600 && step < 650 {
			wait = 0
		}
		for q.Len() < 20 {
			q.Enqueue(now, Packet{Arrived: now - wait, Size: 1514}, Backlog{}, func(Packet) {})
		}
		q.Dequeue(now, func(Packet) { drops = append(drops, now) })
	}
	if phase1 < 5 || len(drops) < phase1+2 {
		t.Fatalf("%d drops before the pause, %d in all", phase1, len(drops))
	}
	// lastcount was 1 (the first dropping state started at count 1).
	delta := float64(phase1 - 1)
	gap := float64(drops[phase1+1] - drops[phase1])
	want := float64(100*ms) / math.Sqrt(delta)
	if gap < want || gap > want+float64(ms) {
		t.Errorf("first gap after re-entering %.2f ms, want interval/√%g = %.2f ms", gap/1e6, delta, want/1e6)
	}
}

// TestPIEMarksOnlyUpToTenPercent: RFC 8033 section 5.1 — with ECN, PIE
// marks an ECT packet it would drop early while drop_prob is at most
// mark_ecnth, 10 %, and drops it beyond (a queue that needs more than 10 %
// is not being answered). accu_prob at 8.5 makes the next arrival an
// early drop whatever the coin says (section 5.3).
func TestPIEMarksOnlyUpToTenPercent(t *testing.T) {
	big := Backlog{Packets: 100, Bytes: 100 * 1514}
	for _, c := range []struct {
		prob               float64
		ecn                uint8
		marked, wasDropped bool
	}{
		{0.10, ECT0, true, false},
		{0.11, ECT0, false, true},
		{0.15, ECT0, false, true},
		{0.05, NotECT, false, true}, // no ECN field to mark
	} {
		p := pieAt(t, QueueConfig{ECN: true})
		p.prob, p.burst, p.qdelayOld, p.accuProb = c.prob, 0, 30*ms, 8.5
		dropped := false
		p.Enqueue(0, Packet{Size: 1514, ECN: c.ecn}, big, func(Packet) { dropped = true })
		pk, queued := p.q.pop()
		if dropped != c.wasDropped || queued && pk.Mark != c.marked {
			t.Errorf("drop_prob %v, ECN %d: dropped %v, queued %v marked %v; want dropped %v, marked %v",
				c.prob, c.ecn, dropped, queued, pk.Mark, c.wasDropped, c.marked)
		}
	}
}
