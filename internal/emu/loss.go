package emu

import (
	"math"
	"math/rand/v2"
)

// LossModel decides, packet by packet, whether the link loses a packet. It
// draws from its own generator exactly once per call.
type LossModel interface {
	Lost() bool
}

type noLoss struct{}

func (noLoss) Lost() bool { return false }

// Bernoulli loses each packet independently with probability Rate.
type Bernoulli struct {
	Rate float64
	rng  *rand.Rand
}

func (b *Bernoulli) Lost() bool { return b.rng.Float64() < b.Rate }

// GilbertElliott is a two-state Markov loss model. In the good state a packet
// is lost with probability LossGood (netem's 1-k), in the bad state with
// LossBad (1-h). After each packet the state moves good to bad with
// probability P and bad to good with probability R.
type GilbertElliott struct {
	P, R              float64
	LossBad, LossGood float64
	bad               bool
	rng               *rand.Rand
}

// Lost decides the packet's fate in the current state, then moves the chain.
// It draws two numbers per packet (loss, then transition) so the sequence of
// states does not depend on the loss outcomes.
func (g *GilbertElliott) Lost() bool {
	u, v := g.rng.Float64(), g.rng.Float64()
	var lost bool
	if g.bad {
		lost = u < g.LossBad
		if v < g.R {
			g.bad = false
		}
	} else {
		lost = u < g.LossGood
		if v < g.P {
			g.bad = true
		}
	}
	return lost
}

// GEParams are the four Gilbert-Elliott parameters.
type GEParams struct{ P, R, LossBad, LossGood float64 }

// Params resolves a LossConfig to the model's four parameters, converting a
// mean loss rate and burst length to the simple Gilbert model.
func (l LossConfig) GEParams() GEParams {
	if l.MeanBurst != 0 {
		r := 1 / l.MeanBurst
		rate := float64(l.Rate)
		return GEParams{P: rate * r / (1 - rate), R: r, LossBad: 1, LossGood: 0}
	}
	return GEParams{P: float64(l.P), R: float64(l.R), LossBad: float64(l.OneMinusH), LossGood: float64(l.OneMinusK)}
}

// StationaryBad is the long-run fraction of packets seen in the bad state.
func (g GEParams) StationaryBad() float64 { return g.P / (g.P + g.R) }

// MeanLoss is the long-run loss rate.
func (g GEParams) MeanLoss() float64 {
	pb := g.StationaryBad()
	return (1-pb)*g.LossGood + pb*g.LossBad
}

// LossVariancePerPacket is the asymptotic variance of the loss count divided
// by the number of packets: the Bernoulli part plus the covariance that the
// Markov state adds (second eigenvalue 1-p-r).
func (g GEParams) LossVariancePerPacket() float64 {
	m := g.MeanLoss()
	pb := g.StationaryBad()
	lambda := 1 - g.P - g.R
	d := g.LossBad - g.LossGood
	v := m*(1-m) + 2*pb*(1-pb)*d*d*lambda/(1-lambda)
	return math.Max(v, 0)
}

// ExpectedLoss returns the long-run loss rate of a config and the variance
// per packet of its loss count, for confidence intervals.
func (l LossConfig) ExpectedLoss() (mean, variancePerPacket float64) {
	switch l.Model {
	case LossBernoulli:
		p := float64(l.Rate)
		return p, p * (1 - p)
	case LossGilbert:
		g := l.GEParams()
		return g.MeanLoss(), g.LossVariancePerPacket()
	case LossOutages:
		// The share of time down, and of the time up the random rate:
		// for packets spread evenly in time, the share lost. How much
		// the count varies depends on the packets' rate against the
		// outages' lengths, which the model does not know: no interval.
		down := float64(l.MeanOutage) / float64(l.MeanOutage+l.MeanBetween)
		return down + (1-down)*float64(l.Rate), math.Inf(1)
	}
	return 0, 0
}

// Outages is the time-based two-state loss model (LossOutages): up and
// down stretches of exponential lengths, drawn from a generator of their
// own that packets never touch, so that every protocol meets the same
// outages at the same times of the link's clock, whatever it sends.
type Outages struct {
	Rate                 float64 // loss while up
	MeanOutage, MeanUp   float64 // ns
	down                 bool
	next                 int64 // link time of the next change
	started              bool
	schedule, packetDraw *rand.Rand
}

// newOutages builds the model: its schedule's generator is seeded from
// rng once, here, and rng then serves the per-packet draws alone.
func newOutages(l LossConfig, rng *rand.Rand) *Outages {
	return &Outages{Rate: float64(l.Rate), MeanOutage: float64(l.MeanOutage), MeanUp: float64(l.MeanBetween),
		schedule: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), packetDraw: rng}
}

// Lost is LostAt without a time: the model needs one (Direction calls
// LostAt); alone it loses as the link was at its last change.
func (o *Outages) Lost() bool { return o.lostIn(o.down) }

// LostAt decides the fate of a packet arriving at link time now (ns):
// the schedule is first advanced to now, then one draw decides a packet
// that arrived while the link was up.
func (o *Outages) LostAt(now int64) bool {
	if !o.started {
		// The link starts up; its first outage comes after an up
		// stretch of its own (a cell opens on a working link).
		o.started = true
		o.next = int64(o.schedule.ExpFloat64() * o.MeanUp)
	}
	for now >= o.next {
		o.down = !o.down
		mean := o.MeanUp
		if o.down {
			mean = o.MeanOutage
		}
		o.next += max(int64(o.schedule.ExpFloat64()*mean), 1)
	}
	return o.lostIn(o.down)
}

func (o *Outages) lostIn(down bool) bool {
	u := o.packetDraw.Float64() // drawn whatever the state, as every model
	return down || u < o.Rate
}

// timedLoss is a loss model whose verdict depends on the arrival time.
type timedLoss interface{ LostAt(now int64) bool }

// newLossModel builds the model for a config with its own generator.
func newLossModel(l LossConfig, rng *rand.Rand) LossModel {
	switch l.Model {
	case LossBernoulli:
		return &Bernoulli{Rate: float64(l.Rate), rng: rng}
	case LossGilbert:
		g := l.GEParams()
		return &GilbertElliott{P: g.P, R: g.R, LossBad: g.LossBad, LossGood: g.LossGood, rng: rng}
	case LossOutages:
		return newOutages(l, rng)
	}
	return noLoss{}
}
