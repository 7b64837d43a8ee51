package emu

import (
	"math"
	"math/rand/v2"
)

// JitterModel draws the deviation of one packet's delay from the base delay,
// in nanoseconds. It draws from its own generator once per call.
type JitterModel interface {
	Sample() float64
}

type noJitter struct{}

func (noJitter) Sample() float64 { return 0 }

type jitterDist struct {
	dist  string
	scale float64 // nanoseconds
	rng   *rand.Rand
}

// paretoShape is netem's shape parameter for its pareto tables.
const paretoShape = 3.0

// Sample returns a deviation: uniform on [-scale, scale]; normal with
// standard deviation scale; pareto (shape 3, shifted to mean zero); or
// netem's paretonormal mixture of 3/4 normal and 1/4 of that pareto.
func (j *jitterDist) Sample() float64 {
	switch j.dist {
	case DistNormal:
		return j.rng.NormFloat64() * j.scale
	case DistPareto:
		return j.pareto() * j.scale
	case DistParetoNormal:
		return (0.75*j.rng.NormFloat64() + 0.25*j.pareto()) * j.scale
	}
	return (2*j.rng.Float64() - 1) * j.scale
}

// pareto draws from a Pareto law of shape 3 and scale 1 (mean 1.5) and
// shifts it to mean zero, so that jitter does not move the mean delay.
func (j *jitterDist) pareto() float64 {
	u := 1 - j.rng.Float64() // (0, 1]
	return math.Pow(u, -1/paretoShape) - paretoShape/(paretoShape-1)
}

func newJitterModel(d DirectionConfig, rng *rand.Rand) JitterModel {
	if d.Jitter == 0 {
		return noJitter{}
	}
	dist := d.JitterDist
	if dist == "" {
		dist = DistUniform
	}
	return &jitterDist{dist: dist, scale: float64(d.Jitter.D().Nanoseconds()), rng: rng}
}
