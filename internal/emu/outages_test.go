package emu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"tlab/internal/units"
)

func outagesFor(seed uint64, rate float64, meanOutage, meanUp time.Duration) *Outages {
	l := LossConfig{Model: LossOutages, Rate: units.Ratio(rate), MeanOutage: units.Duration(meanOutage), MeanBetween: units.Duration(meanUp)}
	return newOutages(l, rand.New(rand.NewPCG(seed, 7)))
}

// TestOutagesLastATimeWhateverIsSent: two senders on links of one seed,
// one sending every millisecond and one every 7 ms (a backed-off
// sender), meet the same outages at the same times: at every multiple of
// 7 ms both see the link in the same state. A burst counted in packets
// would end sooner for the busy sender than for the sparse one.
func TestOutagesLastATimeWhateverIsSent(t *testing.T) {
	busy := outagesFor(3, 0, 300*time.Millisecond, 2*time.Second)
	sparse := outagesFor(3, 0, 300*time.Millisecond, 2*time.Second)
	outages := 0
	was := false
	for ms := int64(0); ms < 120_000; ms++ {
		now := ms * int64(time.Millisecond)
		b := busy.LostAt(now)
		if b && !was {
			outages++
		}
		was = b
		if ms%7 == 0 {
			if s := sparse.LostAt(now); s != b {
				t.Fatalf("at %d ms the busy sender's link is down=%v, the sparse one's down=%v", ms, b, s)
			}
		}
	}
	// About 120 s / 2.3 s = 52 outages; a count near zero would make the
	// comparison say nothing.
	if outages < 20 {
		t.Errorf("%d outages in 120 s, want about 52", outages)
	}
}

// TestOutagesHaveTheirMeanLengths: over 1000 s sampled every millisecond
// (mean up 2 s, mean outage 300 ms, about 435 cycles), the share of time
// down is 0.3/2.3 = 0.1304 within four standard deviations, 0.031: by the
// renewal-reward theorem the share's variance is Var(D − f(D+U)) /
// (n E[D+U]^2) with D ~ Exp(0.3 s), U ~ Exp(2 s), f = 0.1304:
// ((1−f)^2·0.09 + f^2·4) = 0.136, so sd = sqrt(0.136/435)/2.3 = 0.0077.
// The outages' mean length is 300 ms within four standard errors
// (0.3/sqrt(435) = 0.0144 s each): 0.058 s.
func TestOutagesHaveTheirMeanLengths(t *testing.T) {
	o := outagesFor(11, 0, 300*time.Millisecond, 2*time.Second)
	down, n, runs, inRun := 0, 0, 0, false
	for ms := int64(0); ms < 1_000_000; ms++ {
		n++
		if o.LostAt(ms * int64(time.Millisecond)) {
			down++
			if !inRun {
				runs++
			}
			inRun = true
		} else {
			inRun = false
		}
	}
	share := float64(down) / float64(n)
	if !(math.Abs(share-0.3/2.3) <= 0.031) {
		t.Errorf("down %.4f of the time, want 0.1304 ± 0.031", share)
	}
	if meanLen := float64(down) / float64(runs) / 1000; !(math.Abs(meanLen-0.3) <= 0.058) {
		t.Errorf("outages last %.3f s on average (%d of them), want 0.300 ± 0.058", meanLen, runs)
	}
	mean, _ := LossConfig{Model: LossOutages, MeanOutage: units.Duration(300 * time.Millisecond), MeanBetween: units.Duration(2 * time.Second)}.ExpectedLoss()
	if !(math.Abs(mean-0.3/2.3) <= 1e-12) {
		t.Errorf("ExpectedLoss %v, want 0.3/2.3", mean)
	}
}

// TestOutagesLoseAtTheirRateWhileUp: between outages each packet is lost
// with the model's rate (10 %): over 20 000 packets while up, within four
// standard deviations (sqrt(0.09/20000) = 0.0021 each): 0.0085.
func TestOutagesLoseAtTheirRateWhileUp(t *testing.T) {
	o := outagesFor(5, 0.1, 10*time.Millisecond, time.Hour) // up for the whole test, almost surely
	lost := 0
	for i := range 20_000 {
		if o.LostAt(int64(i) * int64(time.Microsecond)) {
			lost++
		}
	}
	if got := float64(lost) / 20_000; !(math.Abs(got-0.1) <= 0.0085) {
		t.Errorf("lost %.4f while up, want 0.100 ± 0.0085", got)
	}
}

// TestOutagesConfigIsChecked: the model takes its two means (and a rate),
// nothing of Gilbert-Elliott's; the means belong to it alone.
func TestOutagesConfigIsChecked(t *testing.T) {
	ms := func(d int) units.Duration { return units.Duration(time.Duration(d) * time.Millisecond) }
	for _, c := range []struct {
		l    LossConfig
		want string
	}{
		{LossConfig{Model: LossOutages, MeanOutage: ms(300), MeanBetween: ms(2000)}, ""},
		{LossConfig{Model: LossOutages, MeanOutage: ms(300)}, "both positive"},
		{LossConfig{Model: LossOutages, MeanOutage: ms(300), MeanBetween: ms(2000), MeanBurst: 3}, "outages takes"},
		{LossConfig{Model: LossBernoulli, Rate: 0.01, MeanOutage: ms(300)}, "belong to model outages"},
		{LossConfig{Model: LossOutages, MeanOutage: ms(300), MeanBetween: ms(2000), Rate: 1}, "below 100%"},
	} {
		err := c.l.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: error %v, want %q", c.l, err, c.want)
		}
	}
}
