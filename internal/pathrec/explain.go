package pathrec

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"tlab/internal/emu"
	"tlab/internal/units"
)

// Fitting each effect once. A direction replayed at a rate, and above all
// on a rate trace, delays the probes by itself: each waits for its
// transmission, and on a trace for the next delivery opportunity, longer
// in a slow stretch. A path that stalled (held its packets, then let them
// go at once) delayed them too. Fitting jitter to the probes' raw delay
// variation counts all of it a second time on replay (the trace adds it,
// and the jitter again). So the fit runs the probes through the rate it
// will replay, with the stalls it found, and gives jitter only what that
// leaves unexplained.

// Stall is a stretch in which a direction delivered nothing and held what
// it got (a handover, a scheduling gap, a short outage): its probes came
// out together at its end. On replay it is a stretch of the rate trace
// without delivery opportunities.
type Stall struct {
	From, To time.Duration // since the recording started
}

// probeTiming is one direction's view of a probe that crossed it: when it
// entered the direction (ns since the recording started, on the sender's
// clock as near as the recording knows it) and its one-way delay (ms, with
// the clocks' unknown offset: only its variation is used).
type probeTiming struct {
	at  int64
	owd float64
}

// stallsIn finds the stalls in a direction's probe delays, given what the
// replay explains already (waits, one per probe): a run of at least three
// consecutive probes each delayed beyond the recording's variation (four
// robust standard deviations above the median) and by more than two and
// a half spacings, whose delay falls the later they were sent (by more
// than half a millisecond a millisecond: they were held, and came out
// together or as the queue behind the hold drained). A shorter hold is
// what jitter with in-order delivery does by itself (a slow packet holds
// the next ones), and stays jitter.
func stallsIn(p []probeTiming, waits []float64, spacing time.Duration) []Stall {
	if len(p) < 10 {
		return nil
	}
	res := make([]float64, len(p))
	for i := range p {
		res[i] = p[i].owd - waits[i]
	}
	base, spread := median(res), robustSD(res)
	threshold := math.Max(4*spread, 2.5*float64(spacing)/1e6)
	held := func(i int) bool { return res[i]-base > threshold }
	var out []Stall
	for i := 0; i < len(p); i++ {
		if !held(i) {
			continue
		}
		j := i
		for j+1 < len(p) && held(j+1) {
			j++
		}
		sent := float64(p[j].at-p[i].at) / 1e6
		falling := j-i >= 2 && sent > 0 && (res[j]-res[i])/sent < -0.5
		// A hold that filled the buffer: the first probes held, the rest
		// dropped until it let go, and the next probe through sent about
		// when it did.
		overflowed := false
		if j+1 < len(p) {
			gap := float64(p[j+1].at-p[j].at) / 1e6
			overflowed = gap >= 3*float64(spacing)/1e6 && res[j]-base >= gap/2 && res[j]-base <= gap+threshold
		}
		if falling || overflowed {
			from := time.Duration(p[i].at)
			if i > 0 {
				// It began after the last probe that crossed unheld.
				from = time.Duration(p[i-1].at+p[i].at) / 2
			}
			out = append(out, Stall{From: from, To: time.Duration(p[i].at) + time.Duration((res[i]-base)*1e6)})
		}
		i = j
	}
	return out
}

// replayWaits runs a direction's probes (their entry times, in order)
// through the rate the fit replays, a constant or a trace with the stalls
// cut out of it, with no delay, jitter or loss and a queue deep enough to
// hold them, beside the recording's own trains (count packets of
// trainSize at each train's time: a probe behind a train waits for it on
// the path too), and returns each probe's wait in ms: what the replay
// adds to a probe by itself.
func replayWaits(d Direction, total time.Duration, at []int64, size int, trains []Train, count, trainSize int) ([]float64, error) {
	cfg := emu.DirectionConfig{QueuePackets: 100000}
	var ops []int64
	switch {
	case d.replaysTrace():
		var err error
		ops, err = emu.ParseTrace("recorded", strings.NewReader(string(Trace(d.replayRates(), d.Stalls, total))))
		if err != nil {
			return nil, err
		}
		if len(ops) == 0 {
			return nil, fmt.Errorf("a trace without delivery opportunities")
		}
		cfg.Trace = "recorded"
	case d.RateBps > 0:
		cfg.Rate = units.Bitrate(d.RateBps)
	default:
		return make([]float64, len(at)), nil
	}
	dir, err := emu.NewDirection(cfg, 0, 1, "replay", ops)
	if err != nil {
		return nil, err
	}
	waits := make([]float64, len(at))
	emit := func(ref int32, v emu.Verdict) {
		if ref >= 0 && v.Drop == emu.Delivered {
			waits[ref] = float64(v.Release-at[ref]) / 1e6
		}
	}
	next := 0 // the next train
	for i, t := range at {
		for ; next < len(trains) && int64(trains[next].At) <= t; next++ {
			for range count {
				dir.Offer(int64(trains[next].At), emu.Frame{Size: trainSize, Ref: -1}, emit)
			}
		}
		dir.Offer(t, emu.Frame{Size: size, Ref: int32(i)}, emit)
	}
	dir.Transmit(math.MaxInt64, emit)
	return waits, nil
}

// replaysTrace tells whether the direction is replayed on a trace: its
// rate varied, or it stalled.
func (d Direction) replaysTrace() bool {
	return variable(d.Rates) || len(d.Stalls) > 0 && d.RateBps > 0
}

// replayRates are the rates a trace replays: the trains', or the median
// rate throughout when only stalls make it a trace.
func (d Direction) replayRates() []Train {
	if variable(d.Rates) {
		return d.Rates
	}
	return []Train{{At: 0, RateBps: d.RateBps}}
}

// jitterShape fits what is left of the delay once the replay's waits are
// taken out: its spread is what the replay must add (the measured
// variance less the waits', so that the two together give the path's),
// its shape lognormal when it is clearly right-skewed (a radio's
// retransmissions, a busy hop) and normal otherwise, and its correlation
// in time from the lag-1 correlation of probes a spacing apart, as
// exp(−spacing/τ).
func jitterShape(owd, waits []float64, spacing time.Duration) (sd float64, dist string, coherence time.Duration) {
	res := make([]float64, len(owd))
	for i := range owd {
		res[i] = owd[i] - waits[i]
	}
	v := variance(owd) - variance(waits)
	if v <= 0 {
		return 0, emu.DistNormal, 0
	}
	sd, dist = math.Sqrt(v), emu.DistNormal
	// A lognormal of tlab's (exp of a standard normal) has a skewness of
	// 6.2; a normal's is 0. Half of one is clearly skewed.
	if skewness(res) > 3 {
		dist = emu.DistLogNormal
	}
	// In rank (Spearman's), which a skewed law does not bend, turned into
	// the latent normal's correlation as the Gaussian copula relates them.
	if rs := lag1(ranks(res)); sd >= 0.01 && rs > 0.2 && rs < 1 {
		r := 2 * math.Sin(math.Pi*rs/6)
		coherence = time.Duration(-float64(spacing) / math.Log(r)).Round(100 * time.Microsecond)
	}
	return sd, dist, coherence
}

func variance(v []float64) float64 {
	s := stddev(v)
	return s * s
}

func skewness(v []float64) float64 {
	if len(v) < 3 {
		return 0
	}
	m := mean(v)
	var m2, m3 float64
	for _, x := range v {
		d := x - m
		m2 += d * d
		m3 += d * d * d
	}
	m2 /= float64(len(v))
	m3 /= float64(len(v))
	if m2 == 0 {
		return 0
	}
	return m3 / math.Pow(m2, 1.5)
}

// lag1 is the Pearson correlation of consecutive values.
func lag1(v []float64) float64 {
	if len(v) < 3 {
		return 0
	}
	m := mean(v)
	var num, den float64
	for i, x := range v {
		den += (x - m) * (x - m)
		if i > 0 {
			num += (x - m) * (v[i-1] - m)
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// ranks returns each value's rank.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for rank, i := range idx {
		r[i] = float64(rank)
	}
	return r
}

// robustSD is the median absolute deviation scaled to a normal's standard
// deviation: a few stalled probes do not move it.
func robustSD(v []float64) float64 {
	m := median(v)
	dev := make([]float64, len(v))
	for i, x := range v {
		dev[i] = math.Abs(x - m)
	}
	return 1.4826 * median(dev)
}

// lognormalMedianShift is how far below its mean tlab's lognormal jitter
// (exp of a standard normal, shifted to mean zero, scaled to unit
// standard deviation) has its median, in standard deviations: the replay
// adds it to the base delay's median, so the fit lifts the base by it.
var lognormalMedianShift = (math.Exp(0.5) - 1) / math.Sqrt((math.E-1)*math.E)

// unheld tells, for each probe (entry times in ns), whether no stall held
// it.
func unheld(at []int64, stalls []Stall) []bool {
	free := make([]bool, len(at))
	for i, t := range at {
		free[i] = !slices.ContainsFunc(stalls, func(s Stall) bool { return t >= int64(s.From) && t <= int64(s.To) })
	}
	return free
}

// pick returns the values whose keep is true.
func pick(v []float64, keep []bool) []float64 {
	out := make([]float64, 0, len(v))
	for i, x := range v {
		if keep[i] {
			out = append(out, x)
		}
	}
	return out
}
