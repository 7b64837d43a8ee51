package pathrec

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/remote"
	"tlab/internal/units"
)

// pathSpec is a path for a recording to be made on: each direction an
// emulated one (with its trace's opportunities, if it has one).
type pathSpec struct {
	up, down       emu.DirectionConfig
	upOps, downOps []int64
	// loadUp and loadDown, when set, add the loaded phase: each direction
	// in turn gets ECT(0) load packets at that rate for loadFor, as
	// tlab record --load sends them.
	loadUp, loadDown float64
	loadFor          time.Duration
}

// recordThrough makes the recording tlab record would make of the path,
// without a network: 100 probes a second for dur, each through the up
// direction to an agent whose clock is 3 s ahead, echoed at once through
// the down direction, and a train of 16 packets of 1242 B each way every
// second (their rates as tlab record reads them, the probes in their
// shadow marked).
func recordThrough(t *testing.T, p pathSpec, dur time.Duration) *Recording {
	t.Helper()
	const offset = int64(3 * time.Second)
	o := Options{Duration: dur, Load: p.loadUp > 0 || p.loadDown > 0, LoadFor: p.loadFor}
	o.defaults()
	extra, _ := o.LoadPlan()
	upFrom := dur
	downFrom := upFrom + o.LoadFor + loadSettle
	phase := func(at int64) byte {
		t := time.Duration(at)
		switch {
		case !o.Load || t < upFrom:
			return PhaseRest
		case t < upFrom+o.LoadFor:
			return PhaseUpLoad
		case t >= downFrom && t < downFrom+o.LoadFor:
			return PhaseDownLoad
		}
		return PhaseSettle
	}
	up, err := emu.NewDirection(p.up, 0, 11, "path/up", p.upOps)
	if err != nil {
		t.Fatal(err)
	}
	down, err := emu.NewDirection(p.down, 0, 12, "path/down", p.downOps)
	if err != nil {
		t.Fatal(err)
	}
	n := int((dur + extra) / (10 * time.Millisecond))
	rest := int(dur / (10 * time.Millisecond))
	rec := &Recording{Duration: dur, Options: o, Probes: make([]Probe, n)}
	type offer struct {
		at   int64
		size int
		ref  int32 // probe index, -1-k for the k-th train packet, loadRef-k for a load's
		ecn  uint8
	}
	const loadRef = -1 << 24
	loads := func(rate float64, from time.Duration) []offer {
		if rate <= 0 {
			return nil
		}
		var out []offer
		gap := bitsOf(LoadSize) / rate * 1e9
		for k := 0; time.Duration(float64(k)*gap) < o.LoadFor; k++ {
			out = append(out, offer{at: int64(from) + int64(float64(k)*gap), size: LoadSize + frameOverhead, ref: int32(loadRef - k), ecn: 2})
		}
		return out
	}
	trainSize := o.TrainSize + frameOverhead
	var upOffers []offer
	for i := range n {
		at := int64(i) * int64(10*time.Millisecond)
		rec.Probes[i] = Probe{Seq: uint32(i), SentNs: at, Phase: phase(at), NearTrain: i < rest && at%int64(time.Second) < int64(trainShadow) && at >= int64(time.Second)}
		upOffers = append(upOffers, offer{at: at, size: o.ProbeSize + frameOverhead, ref: int32(i)})
		if i%100 == 0 && i > 0 && i < rest {
			for j := range o.TrainLen {
				upOffers = append(upOffers, offer{at: at, size: trainSize, ref: int32(-1 - (i/100)*o.TrainLen - j)})
			}
		}
	}
	// What a load's far end counts, on its own clock (the agent's is
	// offset ahead): its packets' arrivals and CE marks.
	count := func(got map[int32]int64, marked map[int32]bool, clock int64) remote.LoadReport {
		var refs []int32
		for ref := range got {
			if ref <= loadRef {
				refs = append(refs, ref)
			}
		}
		slices.Sort(refs)
		slices.Reverse(refs) // in send order
		var r remote.LoadReport
		for _, ref := range refs {
			ecn := byte(2)
			if marked[ref] {
				ecn = 3
			}
			r.Add(LoadSize, got[ref]+clock, ecn)
		}
		return r
	}
	run := func(d *emu.Direction, offers []offer) (map[int32]int64, map[int32]bool) {
		out, marked := map[int32]int64{}, map[int32]bool{}
		emit := func(ref int32, v emu.Verdict) {
			if v.Drop == emu.Delivered {
				out[ref], marked[ref] = v.Release, v.Mark
			}
		}
		slices.SortStableFunc(offers, func(a, b offer) int { return int(a.at - b.at) })
		// tlab record sends probes, trains and load from one UDP socket:
		// one 5-tuple, so one flow to a flow-queueing discipline (which
		// would otherwise serve the sparse probes ahead of the load).
		for _, f := range offers {
			d.Offer(f.at, emu.Frame{Size: f.size, Ref: f.ref, ECN: f.ecn, Flow: 0}, emit)
		}
		d.Transmit(math.MaxInt64, emit)
		return out, marked
	}
	upLoad := loads(p.loadUp, upFrom)
	upOffers = append(upOffers, upLoad...)
	upGot, upMarked := run(up, upOffers)
	if p.loadUp > 0 {
		rec.UpLoad = LoadRun{OfferedBps: p.loadUp, From: upFrom, To: upFrom + o.LoadFor, Sent: len(upLoad), Got: count(upGot, upMarked, offset)}
	}
	var downOffers []offer
	for i := range n {
		if r, ok := upGot[int32(i)]; ok {
			rec.Probes[i].AgentSaw, rec.Probes[i].AgentNs = true, r+offset
			downOffers = append(downOffers, offer{at: r, size: o.ProbeSize + frameOverhead, ref: int32(i)})
		}
	}
	// The agent sends a down train when the up train's end marker
	// reaches it: after the up train's last packet.
	for s := 1; s < rest/100; s++ {
		start := int64(s) * int64(time.Second)
		for j := range o.TrainLen {
			start = max(start, upGot[int32(-1-s*o.TrainLen-j)])
		}
		for j := range o.TrainLen {
			downOffers = append(downOffers, offer{at: start, size: trainSize, ref: int32(-1 - s*o.TrainLen - j)})
		}
	}
	downLoad := loads(p.loadDown, downFrom)
	downOffers = append(downOffers, downLoad...)
	downGot, downMarked := run(down, downOffers)
	if p.loadDown > 0 {
		rec.DownLoad = LoadRun{OfferedBps: p.loadDown, From: downFrom, To: downFrom + o.LoadFor, Sent: len(downLoad), Got: count(downGot, downMarked, 0)}
	}
	for i := range n {
		if r, ok := downGot[int32(i)]; ok && rec.Probes[i].AgentSaw {
			rec.Probes[i].BackNs = r
		}
	}
	bits := float64(trainSize * 8)
	for s := 1; s < rest/100; s++ {
		for _, x := range []struct {
			got map[int32]int64
			to  *[]Train
		}{{upGot, &rec.Up}, {downGot, &rec.Down}} {
			var at []int64
			for j := range o.TrainLen {
				if v, ok := x.got[int32(-1-s*o.TrainLen-j)]; ok {
					at = append(at, v)
				}
			}
			if r := trainRate(at, bits); r > 0 {
				*x.to = append(*x.to, Train{At: time.Duration(s) * time.Second, RateBps: r})
			}
		}
	}
	return rec
}

// traceOps writes a rate trace of the given Mbit/s, one level per second,
// with an outage (no opportunities) from outFrom to outTo.
func traceOps(t *testing.T, mbit []float64, outFrom, outTo time.Duration) []int64 {
	t.Helper()
	var trains []Train
	for s, m := range mbit {
		trains = append(trains, Train{At: time.Duration(s) * time.Second, RateBps: m * 1e6})
	}
	var stalls []Stall
	if outTo > outFrom {
		stalls = []Stall{{From: outFrom, To: outTo}}
	}
	ops, err := emu.ParseTrace("path", strings.NewReader(string(Trace(trains, stalls, time.Duration(len(mbit))*time.Second))))
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

func ms(d float64) units.Duration {
	return units.Duration(time.Duration(d * float64(time.Millisecond)))
}

// TestFitCountsEachEffectOnce records paths made in the emulator, with
// and without a rate trace, an outage, jitter, a shallow or a deep queue,
// and checks that the fit gives jitter only what the rate and the stalls
// do not explain: none where the path had none (the path fitted
// 65 ms to a traced direction without jitter), the configured spread
// where it had some, and the stall found where the path held its packets.
func TestFitCountsEachEffectOnce(t *testing.T) {
	// Slow stretches of two seconds: what a train a second resolves (one
	// train's change is taken for a stall and smoothed away, and what the
	// trace then misses is left to jitter).
	slow := []float64{20, 20, 4, 4, 20, 20, 2, 2, 20, 20, 8, 8, 20, 20, 20, 20, 20, 20, 20, 20}
	cases := []struct {
		name       string
		path       pathSpec
		upJitter   float64 // ms, the path's
		downJitter float64
		downStall  bool
	}{
		{"constant rate, no jitter", pathSpec{
			up:   emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(20e6), QueuePackets: 1000},
			down: emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(20e6), QueuePackets: 1000}}, 0, 0, false},
		{"trace with slow stretches, no jitter", pathSpec{
			up:      emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(8e6), QueuePackets: 20},
			down:    emu.DirectionConfig{Delay: ms(10), Trace: "down", QueuePackets: 1000},
			downOps: traceOps(t, slow, 0, 0)}, 0, 0, false},
		{"trace with an outage, no jitter", pathSpec{
			up:      emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(8e6), QueuePackets: 20},
			down:    emu.DirectionConfig{Delay: ms(10), Trace: "down", QueuePackets: 1000},
			downOps: traceOps(t, slow, 5300*time.Millisecond, 5700*time.Millisecond)}, 0, 0, true},
		{"trace with an outage that holds a train, no jitter", pathSpec{
			up:      emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(8e6), QueuePackets: 20},
			down:    emu.DirectionConfig{Delay: ms(10), Trace: "down", QueuePackets: 1000},
			downOps: traceOps(t, slow, 4900*time.Millisecond, 5300*time.Millisecond)}, 0, 0, true},
		{"jitter up, trace down, shallow queue", pathSpec{
			up:      emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(8e6), QueuePackets: 10, Jitter: ms(2), JitterDist: emu.DistNormal},
			down:    emu.DirectionConfig{Delay: ms(10), Trace: "down", QueuePackets: 1000},
			downOps: traceOps(t, slow, 0, 0)}, 2, 0, false},
		{"jitter both ways, deep queue", pathSpec{
			up:   emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(20e6), QueuePackets: 5000, Jitter: ms(3), JitterDist: emu.DistNormal},
			down: emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(20e6), QueuePackets: 5000, Jitter: ms(1), JitterDist: emu.DistNormal}}, 3, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := recordThrough(t, c.path, 20*time.Second).Fit()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("up: delay %.2f ms, jitter %.2f ms %s; down: delay %.2f ms, jitter %.2f ms %s, stalls %v", f.Up.DelayMs, f.Up.JitterMs, f.Up.JitterDist, f.Down.DelayMs, f.Down.JitterMs, f.Down.JitterDist, f.Down.Stalls)
			// A normal jitter's sample spread over ~1700 probes is within
			// a few per cent; what the rate leaves unexplained (the
			// trace's opportunities against a constant link's) is under
			// half a millisecond.
			for _, x := range []struct {
				way       string
				got, want float64
			}{{"up", f.Up.JitterMs, c.upJitter}, {"down", f.Down.JitterMs, c.downJitter}} {
				if !(math.Abs(x.got-x.want) <= 0.5+0.1*x.want) {
					t.Errorf("%s: fitted jitter %.2f ms, the path's %.2f", x.way, x.got, x.want)
				}
			}
			if got := len(f.Down.Stalls) > 0; got != c.downStall {
				t.Errorf("down: stalls %v, want a stall: %v", f.Down.Stalls, c.downStall)
			}
			for _, s := range f.Down.Stalls {
				if c.downStall && (s.To-s.From < 300*time.Millisecond || s.To-s.From > 500*time.Millisecond) {
					t.Errorf("down: stall %v–%v, the path's lasts 400 ms", s.From, s.To)
				}
			}
			// The base: half the round trip the rate leaves, 10 ms each way.
			if !(math.Abs(f.Up.DelayMs-10) > 1 || math.Abs(f.Down.DelayMs-10) <= 1) {
				t.Errorf("delays up %.2f down %.2f ms, the path's 10 and 10", f.Up.DelayMs, f.Down.DelayMs)
			}
		})
	}
}

// TestFitKeepsTheJittersShape: a right-skewed jitter correlated in time
// comes back lognormal with its time constant (probes 10 ms apart over
// a 20 ms coherence correlate by e^−0.5 = 0.61); a symmetric, independent
// one comes back normal and without one.
//
// The band on the time constant: the fit reads it from the lag-1 rank
// correlation of about 6000 probes (60 s at 100/s). The latent normal's
// ρ = e^−0.5 = 0.607 is a rank correlation ρs = (6/π)·asin(ρ/2) = 0.588,
// whose lag-1 estimate has a standard error of about √((1−ρs²)/n) =
// √(0.654/6000) = 0.0104 (Bartlett, AR(1)). τ = −10 ms / ln ρ moves by
// dτ/dρ = 10/(ρ·ln²ρ) = 66 ms per unit of ρ, and ρ by 0.998 per unit of
// ρs: a standard error of 0.69 ms. Four of them: 20 ± 3 ms.
func TestFitKeepsTheJittersShape(t *testing.T) {
	p := pathSpec{
		up: emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(20e6), QueuePackets: 1000,
			Jitter: ms(3), JitterDist: emu.DistLogNormal, JitterCoherence: ms(20)},
		down: emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(20e6), QueuePackets: 1000,
			Jitter: ms(2), JitterDist: emu.DistNormal, JitterReorders: true},
	}
	f, err := recordThrough(t, p, 60*time.Second).Fit()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("up: %.2f ms %s over %v; down: %.2f ms %s over %v", f.Up.JitterMs, f.Up.JitterDist, f.Up.Coherence, f.Down.JitterMs, f.Down.JitterDist, f.Down.Coherence)
	if f.Up.JitterDist != emu.DistLogNormal || f.Up.Coherence < 17*time.Millisecond || f.Up.Coherence > 23*time.Millisecond {
		t.Errorf("up: %s jitter coherent over %v, the path's lognormal over 20ms", f.Up.JitterDist, f.Up.Coherence)
	}
	if !(math.Abs(f.Up.JitterMs-3) <= 0.6) {
		t.Errorf("up: jitter %.2f ms, the path's 3", f.Up.JitterMs)
	}
	if f.Down.JitterDist != emu.DistNormal || f.Down.Coherence != 0 || !(math.Abs(f.Down.JitterMs-2) <= 0.3) {
		t.Errorf("down: %s jitter %.2f ms coherent over %v, the path's normal 2 ms, independent", f.Down.JitterDist, f.Down.JitterMs, f.Down.Coherence)
	}
	// The two directions' base delays add up to the path's 20 ms: the
	// measured round trip's median lies below that by the lognormal
	// jitter's median shift, and the fit lifts the base by as much.
	if sum := f.Up.DelayMs + f.Down.DelayMs; !(math.Abs(sum-20) <= 0.4) {
		t.Errorf("base delays up %.2f + down %.2f = %.2f ms, the path's 20", f.Up.DelayMs, f.Down.DelayMs, sum)
	}
}

// TestStallsAtEveryPhaseOfTheTrains: three 400 ms holds on a trace of 10
// and 30 Mbit/s, placed every 50 ms from 4.5 to 5.55 s after the start,
// are found at every phase of the trains, and no jitter is fitted to a
// direction without any. Where a hold starts with a train or just before
// one, the buffer overflows: the first probes are held and the rest
// dropped until the hold lets go (at 5.0 s a single probe was held), and
// the held probes' waits, hundreds of milliseconds, must not weigh in
// jitter's spread (they read 1.8 to 9 ms when they did).
func TestStallsAtEveryPhaseOfTheTrains(t *testing.T) {
	var levels []Train
	for s := range 24 {
		levels = append(levels, Train{At: time.Duration(s) * time.Second, RateBps: []float64{10e6, 10e6, 30e6, 30e6}[s%4]})
	}
	for off := 4500 * time.Millisecond; off < 5600*time.Millisecond; off += 50 * time.Millisecond {
		var stalls []Stall
		for k := range 3 {
			from := off + time.Duration(k)*8*time.Second
			stalls = append(stalls, Stall{From: from, To: from + 400*time.Millisecond})
		}
		ops, err := emu.ParseTrace("down", strings.NewReader(string(Trace(levels, stalls, 24*time.Second))))
		if err != nil {
			t.Fatal(err)
		}
		p := pathSpec{
			up:      emu.DirectionConfig{Delay: ms(10), Rate: units.Bitrate(20e6), Jitter: ms(1), JitterDist: emu.DistNormal},
			down:    emu.DirectionConfig{Delay: ms(10), Trace: "down"},
			downOps: ops,
		}
		f, err := recordThrough(t, p, 24*time.Second).Fit()
		if err != nil {
			t.Fatal(err)
		}
		if f.Down.JitterMs > 0.5 {
			t.Errorf("holds from %v: down jitter %.2f ms on a direction without, %d stalls found", off, f.Down.JitterMs, len(f.Down.Stalls))
		}
		// Each stall found is one of the holds: its end within 20 ms, its
		// start within 20 ms and half the train's shadow (the probes in
		// the shadow are not read, and the start is put midway between
		// the probes read on either side). A hold that dropped every probe it met is a loss burst
		// to the probes, not a stall: at least one of three is found.
		if len(f.Down.Stalls) == 0 {
			t.Errorf("holds from %v: no stall found", off)
		}
		for _, s := range f.Down.Stalls {
			if !slices.ContainsFunc(stalls, func(h Stall) bool {
				return (s.To-h.To).Abs() <= 20*time.Millisecond && (s.From-h.From).Abs() <= trainShadow/2+20*time.Millisecond
			}) {
				t.Errorf("holds from %v: found %v, none of %v", off, s, stalls)
			}
		}
	}
}
