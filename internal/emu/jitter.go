package emu

import (
	"math"
	"math/rand/v2"
)

// JitterModel draws the deviation of one packet's delay from the base delay,
// in nanoseconds, for a packet arriving at (ns on the link clock, never
// decreasing). It draws from its own generator at most once per call.
type JitterModel interface {
	Sample(at int64) float64
}

type noJitter struct{}

func (noJitter) Sample(int64) float64 { return 0 }

type jitterDist struct {
	dist  string
	scale float64 // nanoseconds
	rng   *rand.Rand
	// corr is the AR(1) coefficient of the latent normal z (0: each
	// packet independent, drawn as before correlation existed, so that
	// uncorrelated links keep their seeded patterns).
	corr float64
	// coherence, when set, makes the latent an Ornstein–Uhlenbeck process
	// of that time constant (ns) instead: corr then comes from the time
	// since the previous packet, exp(−Δt/coherence).
	coherence float64
	z         float64
	last      int64
	started   bool
}

// paretoShape is netem's shape parameter for its pareto tables.
const paretoShape = 3.0

// Moments of exp(Z), Z standard normal: what lognormal centres and scales.
var (
	logNormalMean = math.Exp(0.5)
	logNormalSD   = math.Sqrt((math.E - 1) * math.E)
)

// Sample returns a deviation: uniform on [-scale, scale]; normal with
// standard deviation scale; pareto (shape 3, shifted to mean zero); netem's
// paretonormal mixture of 3/4 normal and 1/4 of that pareto; or lognormal
// (exp of a standard normal, shifted to mean zero and scaled to standard
// deviation scale: a right tail of 4 standard deviations at its p99, no
// more than 0.76 below). With a correlation each comes from the latent
// AR(1) normal through its quantile function.
func (j *jitterDist) Sample(at int64) float64 {
	if j.coherence > 0 {
		switch {
		case !j.started:
			j.z, j.started = j.rng.NormFloat64(), true
		case at > j.last:
			// The exact step of an Ornstein–Uhlenbeck process of unit
			// variance over Δt; packets at one instant share z.
			r := math.Exp(-float64(at-j.last) / j.coherence)
			j.z = r*j.z + math.Sqrt(1-r*r)*j.rng.NormFloat64()
		}
		j.last = max(j.last, at)
		return j.quantile(j.z) * j.scale
	}
	if j.corr > 0 {
		e := j.rng.NormFloat64()
		if j.started {
			j.z = j.corr*j.z + math.Sqrt(1-j.corr*j.corr)*e
		} else {
			j.z, j.started = e, true
		}
		return j.quantile(j.z) * j.scale
	}
	switch j.dist {
	case DistNormal:
		return j.rng.NormFloat64() * j.scale
	case DistPareto:
		return paretoQuantile(1-j.rng.Float64()) * j.scale
	case DistParetoNormal:
		return (0.75*j.rng.NormFloat64() + 0.25*paretoQuantile(1-j.rng.Float64())) * j.scale
	case DistLogNormal:
		return logNormal(j.rng.NormFloat64()) * j.scale
	}
	return (2*j.rng.Float64() - 1) * j.scale
}

// quantile maps a standard normal z to the distribution, in units of
// scale, keeping its order: the Gaussian copula. paretonormal's two parts
// then move together (one latent drives both).
func (j *jitterDist) quantile(z float64) float64 {
	upper := 0.5 * math.Erfc(z/math.Sqrt2) // 1 − Φ(z), exact far in the tail
	switch j.dist {
	case DistNormal:
		return z
	case DistPareto:
		return paretoQuantile(upper)
	case DistParetoNormal:
		return 0.75*z + 0.25*paretoQuantile(upper)
	case DistLogNormal:
		return logNormal(z)
	}
	return 1 - 2*upper // uniform on [−1, 1]
}

// paretoQuantile is the Pareto law of shape 3 and scale 1 (mean 1.5) at
// upper-tail probability u in (0, 1], shifted to mean zero, so that
// jitter does not move the mean delay.
func paretoQuantile(u float64) float64 {
	u = max(u, math.SmallestNonzeroFloat64)
	return math.Pow(u, -1/paretoShape) - paretoShape/(paretoShape-1)
}

// logNormal is exp(z) shifted to mean zero and scaled to unit standard
// deviation.
func logNormal(z float64) float64 { return (math.Exp(z) - logNormalMean) / logNormalSD }

func newJitterModel(d DirectionConfig, rng *rand.Rand) JitterModel {
	if d.Jitter == 0 {
		return noJitter{}
	}
	dist := d.JitterDist
	if dist == "" {
		dist = DistUniform
	}
	return &jitterDist{dist: dist, scale: float64(d.Jitter.D().Nanoseconds()), rng: rng, corr: float64(d.JitterCorrelation),
		coherence: float64(d.JitterCoherence.D().Nanoseconds())}
}
