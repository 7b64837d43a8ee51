package emu

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"tlab/internal/units"
)

const z99 = 2.576 // two-sided 99 % normal quantile

func mustDirection(t *testing.T, cfg DirectionConfig, seed uint64) *Direction {
	t.Helper()
	d, err := NewDirection(cfg, int64(20*time.Millisecond), seed, "test/up", nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkLoss drives n packets and asserts the realised loss lies in the 99 %
// interval around mean, given the variance per packet of the loss count.
func checkLoss(t *testing.T, loss LossConfig, n int, mean, v float64) {
	t.Helper()
	d := mustDirection(t, DirectionConfig{Loss: loss}, 7)
	lost := 0
	for i := 0; i < n; i++ {
		if admit(d, int64(i)*1000, 100).Drop == DropLoss {
			lost++
		}
	}
	half := z99 * math.Sqrt(v/float64(n))
	got := float64(lost) / float64(n)
	if !(math.Abs(got-mean) <= half) {
		t.Errorf("%+v: realised loss %.5f, expected %.5f ± %.5f", loss, got, mean, half)
	}
}

func TestBernoulliLossRate(t *testing.T) {
	checkLoss(t, LossConfig{Model: LossBernoulli, Rate: 0.01}, 200000, 0.01, 0.01*0.99)
	checkLoss(t, LossConfig{Model: LossBernoulli, Rate: 0.10}, 200000, 0.10, 0.10*0.90)
}

// geMoments are a Gilbert-Elliott chain's long-run loss and the variance
// per packet of its loss count, in closed form: with good→bad p and
// bad→good r the chain is bad π = p/(p+r) of the time and its state
// forgets at λ = 1−p−r a packet; losing lossBad in the bad state and
// lossGood in the good, the mean is π·lossBad + (1−π)·lossGood and two
// packets k apart covary by π(1−π)(lossBad−lossGood)²·λ^k, which summed
// over k ≥ 1 (twice) adds 2·π(1−π)(lossBad−lossGood)²·λ/(1−λ) to a single
// packet's μ(1−μ).
func geMoments(p, r, lossBad, lossGood float64) (mean, variance float64) {
	pi := p / (p + r)
	lambda := 1 - p - r
	mean = pi*lossBad + (1-pi)*lossGood
	cov := pi * (1 - pi) * (lossBad - lossGood) * (lossBad - lossGood)
	return mean, mean*(1-mean) + 2*cov*lambda/(1-lambda)
}

func TestGilbertElliottStationaryLoss(t *testing.T) {
	// Study B's setting: p 1 %, r 10 %, 1-h 70 %, 1-k 0.1 %: bad 1/11 of
	// the time, 0.7/11 + 0.001·10/11 = 6.4545 % on average.
	studyB := LossConfig{Model: LossGilbert, P: 0.01, R: 0.10, OneMinusH: 0.70, OneMinusK: 0.001}
	mean, v := geMoments(0.01, 0.10, 0.70, 0.001)
	if !(math.Abs(mean-0.064545) <= 1e-5) {
		t.Fatalf("closed form: %v", mean)
	}
	checkLoss(t, studyB, 400000, mean, v)
	// Given as a rate and a mean burst, it is Gilbert's simple chain
	// (every bad packet lost, no good one): a burst ends with chance r a
	// packet, so r = 1/4, and π = p/(p+r) = 5 % gives p = 0.05·r/0.95.
	r := 1.0 / 4
	p := 0.05 * r / 0.95
	mean, v = geMoments(p, r, 1, 0)
	checkLoss(t, LossConfig{Model: LossGilbert, Rate: 0.05, MeanBurst: 4}, 400000, mean, v)
	if g := (LossConfig{Model: LossGilbert, Rate: 0.05, MeanBurst: 4}).GEParams(); !(math.Abs(g.P-p) > 1e-12 || math.Abs(g.R-r) <= 1e-12) {
		t.Errorf("rate 5 %%, burst 4: p %v, r %v; want %v, %v", g.P, g.R, p, r)
	}
}

func TestGilbertMeanBurstLength(t *testing.T) {
	const n, wantBurst = 500000, 4.0
	d := mustDirection(t, DirectionConfig{Loss: LossConfig{Model: LossGilbert, Rate: 0.05, MeanBurst: wantBurst}}, 11)
	bursts, lostInBursts, run := 0, 0, 0
	for i := 0; i < n; i++ {
		if admit(d, int64(i), 100).Drop == DropLoss {
			run++
			continue
		}
		if run > 0 {
			bursts++
			lostInBursts += run
			run = 0
		}
	}
	mean := float64(lostInBursts) / float64(bursts)
	// Burst lengths are geometric (sd ≈ mean); with ~6000 bursts the
	// standard error of the mean is about 0.05.
	if se := math.Sqrt(wantBurst*(wantBurst-1)/float64(bursts)) * z99; !(math.Abs(mean-wantBurst) <= se) {
		t.Errorf("mean burst %.3f over %d bursts, want %.1f ± %.3f", mean, bursts, wantBurst, se)
	}
}

func TestRateLimiterOnVirtualClock(t *testing.T) {
	for _, rate := range []float64{1e6, 10e6, 100e6, 500e6} {
		cfg := DirectionConfig{Rate: units.Bitrate(rate), QueuePackets: 1 << 20}
		d := mustDirection(t, cfg, 1)
		// Offer 1514-byte frames at twice the rate for 2000 frames.
		gap := int64(1514 * 8 / (2 * rate) * 1e9)
		var first, last int64
		for i := 0; i < 2000; i++ {
			v := admit(d, int64(i)*gap, 1514)
			if i == 0 {
				first = v.Release
			}
			last = v.Release
		}
		got := 1999 * 1514 * 8 / (float64(last-first) / 1e9)
		if rel := math.Abs(got-rate) / rate; rel > 1e-4 {
			t.Errorf("rate %v: served %.1f bit/s, error %.2e", rate, got, rel)
		}
	}
}

func TestDropTailQueueBound(t *testing.T) {
	cfg := DirectionConfig{Rate: 10e6, QueueBytes: 15140}
	d := mustDirection(t, cfg, 1)
	delivered, dropped := 0, 0
	for i := 0; i < 100; i++ { // a burst of 100 frames at one instant
		if admit(d, 0, 1514).Drop == DropQueue {
			dropped++
		} else {
			delivered++
		}
		if d.queuedBytes+d.wireBytes > 15140 {
			t.Fatalf("backlog %d exceeds the bound", d.queuedBytes+d.wireBytes)
		}
	}
	if delivered != 10 || dropped != 90 {
		t.Fatalf("delivered %d dropped %d, want 10 and 90", delivered, dropped)
	}
	// After the queue drains the link accepts again.
	if v := admit(d, int64(time.Second), 1514); v.Drop != Delivered {
		t.Fatalf("drained queue still drops: %v", v.Drop)
	}
}

func TestDefaultQueueIsOneBDP(t *testing.T) {
	cfg := DirectionConfig{Rate: 20e6}
	if got := cfg.QueueLimitBytes(20e6, 25*time.Millisecond); got != 62500 {
		t.Fatalf("queue = %d bytes, want 62500 (20 Mbit/s x 25 ms)", got)
	}
	if got := cfg.QueueLimitBytes(1e6, time.Millisecond); got != QueueFloorPackets*MaxFrame {
		t.Fatalf("tiny BDP queue = %d, want the floor %d", got, QueueFloorPackets*MaxFrame)
	}
}

func jitterSamples(t *testing.T, dist string, n int) []float64 {
	cfg := DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Jitter: units.Duration(time.Millisecond), JitterDist: dist, JitterReorders: true}
	d := mustDirection(t, cfg, 3)
	out := make([]float64, n)
	for i := range out {
		now := int64(i) * int64(time.Second)
		out[i] = float64(admit(d, now, 100).Release-now) - 10e6
	}
	return out
}

func moments(x []float64) (mean, sd, skew float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	var m2, m3 float64
	for _, v := range x {
		m2 += (v - mean) * (v - mean)
		m3 += (v - mean) * (v - mean) * (v - mean)
	}
	m2 /= float64(len(x))
	m3 /= float64(len(x))
	return mean, math.Sqrt(m2), m3 / math.Pow(m2, 1.5)
}

func TestJitterDistributions(t *testing.T) {
	const n = 100000
	u := jitterSamples(t, DistUniform, n)
	mean, sd, _ := moments(u)
	if !(math.Abs(mean) > 0.02e6 || math.Abs(sd-1e6/math.Sqrt(3)) <= 0.01e6) {
		t.Errorf("uniform: mean %.0f ns sd %.0f ns, want 0 and %.0f", mean, sd, 1e6/math.Sqrt(3))
	}
	for _, v := range u {
		if v < -1e6 || v > 1e6 {
			t.Fatalf("uniform sample %v outside ±1 ms", v)
		}
	}
	mean, sd, skew := moments(jitterSamples(t, DistNormal, n))
	if !(math.Abs(mean) > 0.02e6 || math.Abs(sd-1e6) > 0.015e6 || math.Abs(skew) <= 0.05) {
		t.Errorf("normal: mean %.0f sd %.0f skew %.3f", mean, sd, skew)
	}
	mean, _, skew = moments(jitterSamples(t, DistParetoNormal, n))
	if !(math.Abs(mean) <= 0.02e6) || skew < 0.3 {
		t.Errorf("paretonormal: mean %.0f ns skew %.3f; want mean 0 and a right tail", mean, skew)
	}
}

func TestJitterDoesNotReorderUnlessAsked(t *testing.T) {
	cfg := DirectionConfig{Delay: units.Duration(5 * time.Millisecond), Jitter: units.Duration(2 * time.Millisecond), JitterDist: DistNormal}
	d := mustDirection(t, cfg, 9)
	var last int64
	for i := 0; i < 20000; i++ {
		v := admit(d, int64(i)*100000, 1000) // a packet every 100 us
		if v.Release < last {
			t.Fatalf("packet %d released at %d before its predecessor at %d", i, v.Release, last)
		}
		last = v.Release
	}
	cfg.JitterReorders = true
	d = mustDirection(t, cfg, 9)
	last, reordered := 0, 0
	for i := 0; i < 20000; i++ {
		v := admit(d, int64(i)*100000, 1000)
		if v.Release < last {
			reordered++
		}
		last = v.Release
	}
	if reordered == 0 {
		t.Fatal("jitter_reorders set, but no packet overtook another")
	}
}

// fates lists the verdicts of a direction for a packet sequence.
func fates(t *testing.T, cfg DirectionConfig, seed uint64, sizes []int) []Verdict {
	d := mustDirection(t, cfg, seed)
	out := make([]Verdict, len(sizes))
	for i, s := range sizes {
		out[i] = admit(d, int64(i)*int64(time.Millisecond), s)
	}
	return out
}

func TestSameSeedSameDecisions(t *testing.T) {
	cfg := DirectionConfig{
		Delay: units.Duration(10 * time.Millisecond), Jitter: units.Duration(3 * time.Millisecond), JitterDist: DistParetoNormal,
		Loss:      LossConfig{Model: LossGilbert, P: 0.01, R: 0.1, OneMinusH: 0.7, OneMinusK: 0.001},
		Duplicate: 0.01, Corrupt: 0.01,
	}
	sizes := make([]int, 5000)
	other := make([]int, 5000)
	for i := range sizes {
		sizes[i] = 100 + i%1400
		other[i] = 60 + (i*7)%1400
	}
	a, b := fates(t, cfg, 42, sizes), fates(t, cfg, 42, sizes)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("packet %d: %+v vs %+v with the same seed", i, a[i], b[i])
		}
	}
	// Another protocol sends other sizes: the loss pattern must not change.
	c := fates(t, cfg, 42, other)
	for i := range a {
		if (a[i].Drop == DropLoss) != (c[i].Drop == DropLoss) {
			t.Fatalf("packet %d: loss differs between packet sequences", i)
		}
	}
	d := fates(t, cfg, 43, sizes)
	same := 0
	for i := range a {
		if a[i] == d[i] {
			same++
		}
	}
	if same == len(a) {
		t.Fatal("a different seed gave the same decisions")
	}
}

func TestTraceShaper(t *testing.T) {
	// One opportunity per millisecond: 1500 bytes/ms = 12 Mbit/s.
	ops, err := ParseTrace("t", strings.NewReader("1\n2\n3\n4\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := TraceMeanRate(ops); r != 12e6 {
		t.Fatalf("mean rate %v, want 12e6", r)
	}
	d, err := NewDirection(DirectionConfig{Trace: "t", QueuePackets: 1000}, 0, 1, "t/up", ops)
	if err != nil {
		t.Fatal(err)
	}
	// Ten 1500-byte frames at time 0 leave at 1, 2, ..., 10 ms.
	for i := 0; i < 10; i++ {
		if got, want := admit(d, 0, 1500).Release, int64(i+1)*1e6; got != want {
			t.Fatalf("frame %d released at %d, want %d", i, got, want)
		}
	}
	// Two 700-byte frames share an opportunity; the third spills over.
	d, _ = NewDirection(DirectionConfig{Trace: "t", QueuePackets: 1000}, 0, 1, "t/up", ops)
	got := []int64{admit(d, 0, 700).Release, admit(d, 0, 700).Release, admit(d, 0, 700).Release}
	if got[0] != 1e6 || got[1] != 1e6 || got[2] != 2e6 {
		t.Fatalf("shared opportunity releases %v", got)
	}
	// An idle link wastes its opportunities: a packet at 7.5 ms waits for 8 ms.
	if r := admit(d, 7500000, 100).Release; r != 8e6 {
		t.Fatalf("idle trace released at %d, want 8e6", r)
	}
	if _, err := ParseTrace("bad", strings.NewReader("5\n3\n")); err == nil || !strings.Contains(err.Error(), "bad:2") {
		t.Fatalf("decreasing trace: %v", err)
	}
}

func TestOutageDropsAndRepeats(t *testing.T) {
	cfg := DirectionConfig{Outages: []Outage{{At: units.Duration(time.Second), For: units.Duration(100 * time.Millisecond), Every: units.Duration(time.Second)}}}
	d := mustDirection(t, cfg, 1)
	// In time order: a direction's clock never goes back.
	cases := []struct {
		now  int64
		want DropCause
	}{
		{int64(500 * time.Millisecond), Delivered},
		{int64(1050 * time.Millisecond), DropOutage},
		{int64(1200 * time.Millisecond), Delivered},
		{int64(3020 * time.Millisecond), DropOutage},
	}
	for _, c := range cases {
		if got := admit(d, c.now, 100).Drop; got != c.want {
			t.Errorf("at %v: %v, want %v", time.Duration(c.now), got, c.want)
		}
	}
}

func TestDuplicateAndCorruptRates(t *testing.T) {
	cfg := DirectionConfig{Duplicate: 0.05, Corrupt: 0.02}
	d := mustDirection(t, cfg, 5)
	const n = 100000
	for i := 0; i < n; i++ {
		v := admit(d, int64(i), 1000)
		if v.CorruptBit >= (1000-14)*8 {
			t.Fatalf("corrupt bit %d beyond the payload", v.CorruptBit)
		}
	}
	for name, c := range map[string]struct {
		got uint64
		p   float64
	}{"duplicate": {d.Stats.Duplicated, 0.05}, "corrupt": {d.Stats.Corrupted, 0.02}} {
		half := z99 * math.Sqrt(c.p*(1-c.p)/n)
		if got := float64(c.got) / n; !(math.Abs(got-c.p) <= half) {
			t.Errorf("%s rate %.4f, want %.4f ± %.4f", name, got, c.p, half)
		}
	}
}

func TestValidateRejectsImpossible(t *testing.T) {
	bad := []DirectionConfig{
		{JitterDist: "gamma"},
		{Rate: 1e6, Trace: "x"},
		{Loss: LossConfig{Model: LossGilbert}},
		{Loss: LossConfig{Model: LossBernoulli, P: 0.1}},
		{Loss: LossConfig{Model: "random"}},
		{Outages: []Outage{{For: units.Duration(time.Second), Every: units.Duration(time.Millisecond)}}},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestTracePhase: a trace with one 300 ms hold in its 1 s period
// (opportunities at 1–500 and 801–1000 ms) holds beyond 100 ms the 20
// probes sent every 10 ms from 510 to 700 ms when it starts with the cell
// (trace_phase start, mahimahi's way). With trace_phase random it starts
// at a point of its period drawn from the seed: the same hold, rotated
// (20 probes, or 21 where it starts between two), the same for one seed
// twice, and across seeds at points spread over the whole period.
func TestTracePhase(t *testing.T) {
	var lines strings.Builder
	for ms := 1; ms <= 1000; ms++ {
		if ms <= 500 || ms > 800 {
			fmt.Fprintln(&lines, ms)
		}
	}
	ops, err := ParseTrace("hold", strings.NewReader(lines.String()))
	if err != nil {
		t.Fatal(err)
	}
	// held returns when the first probe held beyond 100 ms was sent (ms)
	// and how many were, over one period.
	held := func(phase string, seed uint64) (first, n int) {
		d, err := NewDirection(DirectionConfig{Trace: "hold", TracePhase: phase, QueuePackets: 100000}, 0, seed, "path/down", ops)
		if err != nil {
			t.Fatal(err)
		}
		first = -1
		for ms := 0; ms < 1000; ms += 10 {
			if v := admit(d, int64(ms)*1e6, 100); v.Release-int64(ms)*1e6 > 100e6 {
				if first < 0 {
					first = ms
				}
				n++
			}
		}
		return first, n
	}
	for _, phase := range []string{TracePhaseStart, ""} {
		if first, n := held(phase, 1); first != 510 || n != 20 {
			t.Errorf("trace_phase %q: %d held from %d ms, want 20 from 510 (the trace starts with the cell)", phase, n, first)
		}
	}
	lo, hi := 1000, -1
	for seed := uint64(1); seed <= 20; seed++ {
		first, n := held(TracePhaseRandom, seed)
		if again, _ := held(TracePhaseRandom, seed); again != first {
			t.Errorf("seed %d: held from %d ms, then %d: not seeded", seed, first, again)
		}
		if n != 20 && n != 21 {
			t.Errorf("seed %d: %d probes held from %d ms, want the hold's 20, rotated", seed, n, first)
		}
		lo, hi = min(lo, first), max(hi, first)
	}
	if !(lo < 200 && hi > 700) {
		t.Errorf("random phases hold from %d to %d ms over 20 seeds: want them spread over the period", lo, hi)
	}
	if err := (DirectionConfig{Rate: 1e6, TracePhase: TracePhaseRandom}).Validate(); err == nil {
		t.Error("trace_phase without a trace was accepted")
	}
	if err := (DirectionConfig{Trace: "hold", TracePhase: "middle"}).Validate(); err == nil {
		t.Error("trace_phase middle was accepted")
	}
}
