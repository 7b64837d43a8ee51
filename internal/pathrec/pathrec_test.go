package pathrec

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
)

// synthetic makes a recording of a path with 10 ms up and 12 ms down,
// agent clock 500 ms ahead, up delays varying 0, 1, 2, 3 ms in turn, the
// agent holding each probe 0, 4 or 9 ms before it echoes it, and losses
// given by pattern (u: lost up, d: lost down, .: fine), repeated.
func synthetic(n int, pattern string) *Recording {
	r := &Recording{Duration: time.Duration(n) * 10 * time.Millisecond, Options: Options{Rate: 100}}
	for i := 0; i < n; i++ {
		sent := int64(i) * 10e6
		p := Probe{Seq: uint32(i), SentNs: sent}
		switch pattern[i%len(pattern)] {
		case 'u':
		case 'd':
			p.AgentSaw = true
		default:
			p.AgentSaw = true
			up := int64(10e6) + int64(i%4)*1e6
			hold := []int64{0, 4e6, 9e6}[i%3]
			p.AgentNs = sent + up + 500e6
			p.AgentSentNs = p.AgentNs + hold
			p.BackNs = sent + up + hold + 12e6
		}
		r.Probes = append(r.Probes, p)
	}
	return r
}

// TestFitRecoversTheSyntheticPath: the fit gives the round trip, each
// direction's delay variation, loss and bursts as worked out by hand; the
// agent's clock offset does not show, nor its hold of each probe.
func TestFitRecoversTheSyntheticPath(t *testing.T) {
	// 20 probes: 2 lost up in one burst, 1 lost down.
	pattern := "....uu.......d......"
	f, err := synthetic(2000, pattern).Fit()
	if err != nil {
		t.Fatal(err)
	}
	// Round trips 22, 23, 24, 25 ms (up 10–13, down 12).
	if f.RTTMinMs != 22 || f.RTTMedianMs < 23 || f.RTTMedianMs > 24 {
		t.Errorf("rtt min %v median %v", f.RTTMinMs, f.RTTMedianMs)
	}
	// Each direction gets half the median round trip; up varies 0..3 ms
	// (the standard deviation of 0, 1, 2, 3 in near-equal shares is about
	// 1.1), down not at all.
	if f.Up.DelayMs != f.RTTMedianMs/2 || f.Down.DelayMs != f.RTTMedianMs/2 {
		t.Errorf("delays up %v down %v, want half the median round trip %v", f.Up.DelayMs, f.Down.DelayMs, f.RTTMedianMs)
	}
	if f.Up.JitterMs < 1 || f.Up.JitterMs > 1.3 || f.Down.JitterMs != 0 {
		t.Errorf("jitter up %v down %v", f.Up.JitterMs, f.Down.JitterMs)
	}
	if !(math.Abs(f.Up.LossPct-10) <= 1e-9) || f.Up.MeanBurst != 2 {
		t.Errorf("up loss %v%%, burst %v; want 10%% in bursts of 2", f.Up.LossPct, f.Up.MeanBurst)
	}
	// Down loss counts among the probes the agent saw: 1 of 18.
	if !(math.Abs(f.Down.LossPct-100.0/18) <= 1e-9) || f.Down.MeanBurst != 1 {
		t.Errorf("down loss %v%%, burst %v", f.Down.LossPct, f.Down.MeanBurst)
	}
}

// TestProfileParsesAndTraceKeepsTheRate: the written profile is a valid
// profile the emulator reads back with the fit's values, and a rate trace
// carries each train's rate in its delivery opportunities.
func TestProfileParsesAndTraceKeepsTheRate(t *testing.T) {
	r := synthetic(1000, "......u.....")
	r.Up = []Train{{At: 0, RateBps: 20e6}, {At: time.Second, RateBps: 20e6}, {At: 2 * time.Second, RateBps: 20e6}}
	// A train a second, as tlab record sends them: 10 Mbit/s for 5 s,
	// 40 for 3 s, 10 for 2 s.
	for s, mbit := range []float64{10, 10, 10, 10, 10, 40, 40, 40, 10, 10} {
		r.Down = append(r.Down, Train{At: time.Duration(s) * time.Second, RateBps: mbit * 1e6})
	}
	f, err := r.Fit()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	yaml, traces := f.Profile("mypath", "192.0.2.1:7447", r, dir)
	p, err := emu.ParseProfile("mypath.yaml", yaml)
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	link := p.Link
	if link.Up.Rate.BitsPerSecond() != 20e6 || link.Up.Trace != "" {
		t.Errorf("up: rate %v, trace %q; want a constant 20 Mbit/s", link.Up.Rate, link.Up.Trace)
	}
	if link.Down.Trace == "" || len(traces) != 1 {
		t.Fatalf("down varied 10–40 Mbit/s: want a trace, got %q and %d traces\n%s", link.Down.Trace, len(traces), yaml)
	}
	ops, err := emu.ParseTrace("down", strings.NewReader(string(traces[link.Down.Trace])))
	if err != nil {
		t.Fatal(err)
	}
	// 5 s at 10, 3 s at 40, 2 s at 10 Mbit/s: 190 Mbit in 10 s, as
	// 1500-byte opportunities.
	if got, want := float64(len(ops)), 190e6/(1500*8); !(math.Abs(got-want) <= 0.01*want) {
		t.Errorf("%v delivery opportunities, want %v", got, want)
	}
	// The probe at 6 of every 12 lost up, each alone: of 1000 probes
	// those at 6, 18, … 990, (990−6)/12+1 = 83, 8.300 %, in runs of one,
	// which is plain (Bernoulli) loss, not a burst model.
	if !strings.Contains(string(yaml), "  loss: 8.300%\n") || strings.Contains(string(yaml), "gilbert") {
		t.Errorf("up: want plain loss of 8.300 %%:\n%s", yaml)
	}
	// Two consecutive probes in 12 lost: 16.667 % in runs of two, which
	// the simple Gilbert model carries as its mean burst.
	bursty := synthetic(1200, "....uu......")
	bf, err := bursty.Fit()
	if err != nil {
		t.Fatal(err)
	}
	byaml, _ := bf.Profile("bursty", "192.0.2.1:7447", bursty, dir)
	bp, err := emu.ParseProfile("bursty.yaml", byaml)
	if err != nil {
		t.Fatalf("%v\n%s", err, byaml)
	}
	if l := bp.Link.Up.Loss; l.Model != "gilbert-elliott" || l.MeanBurst != 2 || !(math.Abs(float64(l.Rate)-1.0/6) <= 1e-5) {
		t.Errorf("up, runs of two lost: loss %+v, want gilbert-elliott at 16.667 %% in bursts of 2\n%s", l, byaml)
	}
}

// TestOneBunchedTrainDoesNotMakeTheTrace: a train read thousands of times
// faster than its neighbours (a stall that released it at once) leaves
// the replayed rates; a level that lasts two trains stays, and so does the
// median rate.
func TestOneBunchedTrainDoesNotMakeTheTrace(t *testing.T) {
	r := synthetic(1000, "..........")
	for s, mbit := range []float64{10, 10, 3000, 10, 30, 30, 10, 10, 3000, 30} {
		r.Down = append(r.Down, Train{At: time.Duration(s) * time.Second, RateBps: mbit * 1e6})
	}
	f, err := r.Fit()
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, tr := range f.Down.Rates {
		got = append(got, tr.RateBps/1e6)
	}
	// The median of each train and its neighbours (the last three at the
	// end), worked by hand.
	want := []float64{10, 10, 10, 30, 30, 30, 10, 10, 30, 30}
	if !slices.Equal(got, want) {
		t.Errorf("replayed rates %v Mbit/s, want %v", got, want)
	}
	// Five trains at 10, three at 30, two at 3000: the middle two are 10
	// and 30.
	if f.Down.RateBps != 20e6 {
		t.Errorf("median rate %v, want 20 Mbit/s", f.Down.RateBps)
	}
	_, traces := f.Profile("p", "192.0.2.1:7447", r, t.TempDir())
	for _, tr := range traces {
		ops, err := emu.ParseTrace("down", strings.NewReader(string(tr)))
		if err != nil {
			t.Fatal(err)
		}
		if mean := emu.TraceMeanRate(ops) / 1e6; mean > 30 {
			t.Errorf("trace mean %.1f Mbit/s over a path of 10 and 30", mean)
		}
	}
	if len(traces) != 1 {
		t.Errorf("%d traces, want the down direction's", len(traces))
	}
}

// TestTrainRateByHand: four packets of 1000 bits arriving at 0, 1, 2 and
// 3 ms (in any order) carried three packets' bits in the 3 ms between the
// first arrival and the last: 3000 bit / 3 ms = 1 Mbit/s. Fewer than four
// packets, or all at once, give no rate.
func TestTrainRateByHand(t *testing.T) {
	if got := trainRate([]int64{3e6, 0, 2e6, 1e6}, 1000); !(math.Abs(got-1e6) <= 1e-6) {
		t.Errorf("four packets 1 ms apart: %v bit/s, want 1e6", got)
	}
	// 16 packets of 1270 bytes on the wire behind a 20 Mbit/s link leave
	// it 1270·8/20e6 = 508 µs apart: the link's rate.
	at := make([]int64, 16)
	for i := range at {
		at[i] = 5e9 + int64(i)*508e3
	}
	if got := trainRate(at, 1270*8); !(math.Abs(got-20e6) <= 1) {
		t.Errorf("a train 508 µs apart: %v bit/s, want 20e6", got)
	}
	for _, at := range [][]int64{{0, 1e6, 2e6}, {5, 5, 5, 5}} {
		if got := trainRate(at, 1000); got != 0 {
			t.Errorf("trainRate(%v) = %v, want none (0)", at, got)
		}
	}
}

// TestCoherenceByHand: the coherence of a residual series 0, 1, … 9
// (probes 10 ms apart, nothing explained by the rate), worked by hand.
// Its ranks are itself; their lag-1 correlation is
// Σ(i−4.5)(i−5.5) over i = 1..9 / Σ(i−4.5)² over i = 0..9 = 57.75/82.5 =
// 0.7 (Spearman's ρs). The latent normal's correlation, as the Gaussian
// copula relates them, is ρ = 2·sin(π·0.7/6) = 2·0.358368 = 0.716736, and
// the time constant −10 ms / ln 0.716736 = 10/0.333047 = 30.03 ms, which
// the fit rounds to 30.0 ms (28.0 ms if ρs were taken for ρ).
func TestCoherenceByHand(t *testing.T) {
	owd := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	sd, dist, coherence := jitterShape(owd, make([]float64, len(owd)), 10*time.Millisecond)
	// The sample standard deviation of 0..9: √(82.5/9) = 3.0277.
	if !(math.Abs(sd-math.Sqrt(82.5/9)) <= 1e-9) || dist != emu.DistNormal {
		t.Errorf("jitter %v %s, want %v normal", sd, dist, math.Sqrt(82.5/9))
	}
	if coherence != 30*time.Millisecond {
		t.Errorf("coherence %v, want 30ms", coherence)
	}
}

// TestOutagesAreFoundInTime: by hand, 20 probes 40 ms apart, lost at 2,
// 4-7, 13-15 and 19: the runs of four (160 ms) and three (120 ms) are
// outages (at least OutageMin, 100 ms, and OutageMinProbes), 7 probes
// down in 2 outages, 140 ms each on average, (20 − 7) × 40 ms / 2 =
// 260 ms up between them; the lone losses at 2 and 19 stay as the rate
// between outages: 2 of the 13 probes outside them. At 10 ms apart the
// same runs last 40 and 30 ms: bursts, not outages.
func TestOutagesAreFoundInTime(t *testing.T) {
	lost := make([]bool, 20)
	for _, i := range []int{2, 4, 5, 6, 7, 13, 14, 15, 19} {
		lost[i] = true
	}
	n, meanOutage, meanBetween, rest := outagesIn(lost, 40*time.Millisecond)
	if n != 2 || meanOutage != 140*time.Millisecond || meanBetween != 260*time.Millisecond {
		t.Errorf("outages %d, mean %v, between %v; want 2, 140ms, 260ms", n, meanOutage, meanBetween)
	}
	kept := 0
	for _, l := range rest {
		if l {
			kept++
		}
	}
	if len(rest) != 13 || kept != 2 {
		t.Errorf("outside the outages: %d probes, %d lost; want 13 and 2", len(rest), kept)
	}
	if n, _, _, rest := outagesIn(lost, 10*time.Millisecond); n != 0 || len(rest) != 20 {
		t.Errorf("at 10 ms apart: %d outages and %d probes outside them, want none and all 20", n, len(rest))
	}
}

// TestOutagesReplayInTime: a path that lost twelve probes in a row every
// 100 (120 ms down each second, at 100 probes/s) and one more in every 100
// alone is written as the outages model: 120 ms outages, (2000 − 240) ×
// 10 ms / 20 = 880 ms between on average, and a rate of 20 of the 1760
// probes outside them, 1.136 %, between them, which the emulator reads
// back.
func TestOutagesReplayInTime(t *testing.T) {
	pattern := strings.Repeat(".", 40) + strings.Repeat("u", 12) + strings.Repeat(".", 30) + "u" + strings.Repeat(".", 17)
	r := synthetic(2000, pattern)
	f, err := r.Fit()
	if err != nil {
		t.Fatal(err)
	}
	yaml, _ := f.Profile("outages", "192.0.2.1:7447", r, t.TempDir())
	p, err := emu.ParseProfile("outages.yaml", yaml)
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	l := p.Link.Up.Loss
	if l.Model != emu.LossOutages || l.MeanOutage.D() != 120*time.Millisecond || l.MeanBetween.D() != 880*time.Millisecond || !(math.Abs(float64(l.Rate)-20.0/1760) <= 1e-5) {
		t.Errorf("up loss %+v, want outages of 120ms, 880ms between, 1.136 %% between\n%s", l, yaml)
	}
}
