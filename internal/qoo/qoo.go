// Package qoo scores a stack's outcome on a network in the IETF's Quality
// of Outcome form (draft-ietf-ippm-qoo-09): an application is described
// by a requirement profile, percentile points each with the latency of
// optimal performance (ROP) and the latency at the point of unacceptable
// performance (CPUP), and a loss bound of each kind; a measured latency
// distribution and loss ratio score from 0 (unacceptable) to 100
// (optimal) by linear interpolation between the two, the worst component
// deciding. Where a requirement (delay_p99_ms<=20) is a cliff, a score
// tells "almost" from "hopeless".
//
// Profiles are read in the format LibreQoS reads (qoo_profiles.json,
// schema_version 2), so that an operator's profiles work as they are.
package qoo

import (
	"fmt"
	"math"
	"slices"
)

// Profile is one application's requirement profile.
type Profile struct {
	ID, Name, Description string
	// Latency holds the percentile points; Loss the loss bounds, percent.
	Latency []LatencyPoint
	Loss    Bounds
	// MinThroughputMbps is the draft's one global minimum required
	// throughput, Mbit/s; 0 is none (LibreQoS's profiles carry none, and
	// tlab writes it as its own field, throughput_min_mbps).
	MinThroughputMbps float64
	// PerInterval says the latency bounds are multiples of the cell's
	// request interval (its interval_ms), not milliseconds: one profile
	// then follows a swept period, as a control loop's deadline does
	// (tlab's own field, per_interval; ForInterval makes the profile of
	// one interval).
	PerInterval bool
	// Normalization, when set, scores latency above a baseline (LibreQoS's
	// latency_normalization): OffsetMs subtracts a fixed amount; or the
	// measured BaselinePercentile (or the fixed BaselineMs) is subtracted.
	Normalization Normalization
}

// LatencyPoint is one percentile of the latency distribution and its two
// bounds, ms: OptimalMs (ROP) and UnacceptableMs (CPUP).
type LatencyPoint struct {
	Percentile                float64
	OptimalMs, UnacceptableMs float64
}

// Bounds are the loss ratio's, percent: Optimal (ROP) and Unacceptable
// (CPUP).
type Bounds struct{ Optimal, Unacceptable float64 }

// Normalization is LibreQoS's latency normalization; the zero value is
// none (the draft's scoring of absolute latency).
type Normalization struct {
	Mode               string // "", "none", "threshold_offset_ms", "excess_over_baseline"
	OffsetMs           float64
	BaselineMs         float64
	BaselinePercentile float64 // 0: BaselineMs is used
}

// Measurement is what a score is computed from: the latency at a
// percentile (ms, over the messages that completed) and the share of
// messages lost, percent (failed or never sent: the draft's packet loss,
// at the application's unit).
//
// ThroughputMbps is the throughput the cell measured (a transfer's
// goodput); it is read only by a profile with a throughput requirement,
// and a value that is not a number (nothing completed) fails it.
type Measurement struct {
	LatencyAt      func(percentile float64) float64
	LossPct        float64
	ThroughputMbps float64
}

// Result is a score and its components, 0 to 100, and what limited it.
// Throughput is the draft's step: 100 when the measured throughput meets
// the profile's minimum (or the profile has none), 0 when it does not.
type Result struct {
	Score, Latency, Loss, Throughput float64
	// Limit names the component that set the score ("loss",
	// "throughput", or the percentile, as "p99").
	Limit string
}

// interpolate is the draft's m = 1 − (M − ROP) / (CPUP − ROP), clamped to
// [0, 1], as a percentage. Bounds that leave no room (CPUP ≤ ROP) make a
// step at ROP, as LibreQoS does; a value that is not a number (a
// distribution without completed messages) is unacceptable.
func interpolate(measured, optimal, unacceptable float64) float64 {
	if math.IsNaN(measured) {
		return 0
	}
	if unacceptable <= optimal {
		if measured <= optimal {
			return 100
		}
		return 0
	}
	m := 1 - (measured-optimal)/(unacceptable-optimal)
	return 100 * min(max(m, 0), 1)
}

// Score scores m against the profile, as the draft computes it:
// QoO_latency is the minimum over the percentile points, QoO_loss the
// loss's, QoO_throughput = (M_Throughput >= R_Throughput) ? 100 : 0, and
// QoO = min(QoO_latency, QoO_loss, QoO_throughput).
func (p Profile) Score(m Measurement) Result {
	base := 0.0
	switch p.Normalization.Mode {
	case "threshold_offset_ms":
		base = p.Normalization.OffsetMs
	case "excess_over_baseline":
		base = p.Normalization.BaselineMs
		if p.Normalization.BaselinePercentile > 0 {
			base = m.LatencyAt(p.Normalization.BaselinePercentile)
		}
	}
	r := Result{Latency: 100, Limit: "none"}
	for _, l := range p.Latency {
		v := m.LatencyAt(l.Percentile)
		if base > 0 {
			v = math.Max(v-base, 0)
		}
		if s := interpolate(v, l.OptimalMs, l.UnacceptableMs); s < r.Latency || r.Limit == "none" {
			r.Latency, r.Limit = s, fmt.Sprintf("p%g", l.Percentile)
		}
	}
	r.Loss = interpolate(m.LossPct, p.Loss.Optimal, p.Loss.Unacceptable)
	r.Throughput = 100
	if p.MinThroughputMbps > 0 && !(m.ThroughputMbps >= p.MinThroughputMbps) {
		r.Throughput = 0
	}
	r.Score = min(r.Latency, r.Loss, r.Throughput)
	if r.Loss < r.Latency {
		r.Limit = "loss"
	}
	if r.Throughput < min(r.Latency, r.Loss) {
		r.Limit = "throughput"
	}
	return r
}

// ForInterval is the profile of a cell whose request interval is
// intervalMs: a PerInterval profile's latency bounds times the interval,
// in ms; any other profile as it is.
func (p Profile) ForInterval(intervalMs float64) Profile {
	if !p.PerInterval {
		return p
	}
	q := p
	q.PerInterval = false
	q.Latency = make([]LatencyPoint, len(p.Latency))
	for i, l := range p.Latency {
		q.Latency[i] = LatencyPoint{Percentile: l.Percentile, OptimalMs: l.OptimalMs * intervalMs, UnacceptableMs: l.UnacceptableMs * intervalMs}
	}
	return q
}

// Validate reports what makes a profile unusable, each problem once.
func (p Profile) Validate() []string {
	var errs []string
	if p.ID == "" {
		errs = append(errs, "id must not be empty")
	}
	if p.Name == "" {
		errs = append(errs, "name must not be empty")
	}
	if len(p.Latency) == 0 {
		errs = append(errs, "latency must hold at least one percentile point")
	}
	seen := map[float64]bool{}
	for _, l := range p.Latency {
		switch {
		case !(l.Percentile >= 0 && l.Percentile <= 100):
			errs = append(errs, fmt.Sprintf("latency percentile %g: want 0 to 100", l.Percentile))
		case seen[l.Percentile]:
			errs = append(errs, fmt.Sprintf("latency percentile %g given twice", l.Percentile))
		case !finite(l.OptimalMs) || !finite(l.UnacceptableMs) || l.OptimalMs < 0 || l.UnacceptableMs < 0:
			errs = append(errs, fmt.Sprintf("latency p%g: its bounds must be finite and not negative", l.Percentile))
		}
		seen[l.Percentile] = true
	}
	if !(p.Loss.Optimal >= 0 && p.Loss.Optimal <= 100 && p.Loss.Unacceptable >= 0 && p.Loss.Unacceptable <= 100) {
		errs = append(errs, "loss_percent must be within 0 to 100")
	}
	if p.PerInterval && p.Normalization.Mode != "" && p.Normalization.Mode != "none" {
		errs = append(errs, "per_interval takes no latency_normalization: its bounds are already relative to the period")
	}
	if !finite(p.MinThroughputMbps) || p.MinThroughputMbps < 0 {
		errs = append(errs, "throughput_min_mbps must be finite and not negative")
	}
	switch p.Normalization.Mode {
	case "", "none", "threshold_offset_ms", "excess_over_baseline":
	default:
		errs = append(errs, fmt.Sprintf("latency_normalization mode %q: want none, threshold_offset_ms or excess_over_baseline", p.Normalization.Mode))
	}
	return errs
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Percentiles are the profile's latency percentiles, in order.
func (p Profile) Percentiles() []float64 {
	var out []float64
	for _, l := range p.Latency {
		out = append(out, l.Percentile)
	}
	if p.Normalization.Mode == "excess_over_baseline" && p.Normalization.BaselinePercentile > 0 {
		out = append(out, p.Normalization.BaselinePercentile)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
