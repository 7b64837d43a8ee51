package explore

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Param is one explored parameter: a scenario field (its dotted path, as a
// matrix key) and the range it spans, in the field's own unit ("0%..5%",
// "5ms..300ms", "10Mbit..100Mbit", "0..8"), spaced linearly or
// logarithmically.
type Param struct {
	Path string
	Low  float64
	High float64
	// Unit is the suffix the field's values are written with ("%",
	// "ms"; "" for a plain number).
	Unit string
	Log  bool
	// Integer rounds values to whole numbers (a count such as
	// cross.flows): given when both ends are whole numbers without a
	// unit.
	Integer bool
	// Resolution is the finest step the search refines to, in the
	// field's unit (0: a 32nd of the range).
	Resolution float64
}

var rangeRE = regexp.MustCompile(`^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z%µ/]*)\s*\.\.\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z%µ/]*)\s*$`)

// ParseRange reads "LOW..HIGH" with the same unit on both ends.
func ParseRange(s string) (low, high float64, unit string, integer bool, err error) {
	m := rangeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, "", false, fmt.Errorf("range %q: want LOW..HIGH in the field's unit, such as 0%%..5%% or 5ms..300ms", s)
	}
	if m[2] != m[4] {
		return 0, 0, "", false, fmt.Errorf("range %q: both ends need the same unit (%q and %q)", s, m[2], m[4])
	}
	low, _ = strconv.ParseFloat(m[1], 64)
	high, _ = strconv.ParseFloat(m[3], 64)
	if !(high > low) {
		return 0, 0, "", false, fmt.Errorf("range %q: the high end must be above the low end", s)
	}
	integer = m[2] == "" && !strings.ContainsAny(m[1]+m[3], ".eE")
	return low, high, m[2], integer, nil
}

// ParseAmount reads one value in the range's unit ("0.25%").
func ParseAmount(s, unit string) (float64, error) {
	t := strings.TrimSpace(s)
	if unit != "" {
		t = strings.TrimSuffix(t, unit)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("%q: want a positive amount in %q", s, unit)
	}
	return v, nil
}

// At is the parameter's value at u in [0, 1] along its range.
func (p Param) At(u float64) float64 {
	var v float64
	if p.Log {
		v = p.Low * math.Pow(p.High/p.Low, u)
	} else {
		v = p.Low + u*(p.High-p.Low)
	}
	if p.Integer {
		v = math.Round(v)
	}
	return v
}

// Format writes a value as the field reads it: four significant digits
// and the unit ("1.797%", "20ms").
func (p Param) Format(v float64) string {
	if p.Integer {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + p.Unit
	}
	return strconv.FormatFloat(roundSignificant(v, 4), 'f', -1, 64) + p.Unit
}

func roundSignificant(v float64, digits int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	scale := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

// steps is how many finest steps the range holds when the initial grid
// has coarse intervals: coarse · 2^depth, with depth the fewest halvings
// that reach the resolution (a 32nd of the range by default), and never a
// step below one for an integer parameter.
func (p Param) depth(coarse int) int {
	res := p.Resolution
	if res <= 0 {
		res = (p.High - p.Low) / 32
		if p.Log {
			res = 0
		}
	}
	d := 0
	for d < 12 {
		step := p.step(coarse << d)
		if res > 0 && step <= res || res == 0 && coarse<<d >= 32 {
			break
		}
		d++
	}
	for p.Integer && d > 0 && (p.High-p.Low)/float64(coarse<<d) < 1 {
		d--
	}
	return d
}

// step is the widest gap between neighbouring values on a grid of n
// intervals: at the top for a logarithmic range.
func (p Param) step(n int) float64 {
	return p.At(1) - p.At(1-1/float64(n))
}
