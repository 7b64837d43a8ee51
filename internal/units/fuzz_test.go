package units

import (
	"math"
	"testing"
)

// FuzzParse: no text makes a unit parser panic, and what parses prints as
// text that parses back to the same value (a value written to a manifest
// or scenario reads back as it was).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"25ms", "1.5s", "100us", "60Mbit", "1Gbit", "500kbit", "64KiB", "1MB", "2%", "0.1%", "1e3", "-5ms", "NaN", "9999999999999h"} {
		f.Add(s)
	}
	near := func(a, b float64) bool {
		return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDuration(s); err == nil {
			if back, err := ParseDuration(d.String()); err != nil || back != d {
				t.Errorf("duration %q: %v prints %q, reads back %v (%v)", s, d, d.String(), back, err)
			}
		}
		if r, err := ParseBitrate(s); err == nil && r.String() != "0" {
			if back, err := ParseBitrate(r.String()); err != nil || !near(float64(back), float64(r)) {
				t.Errorf("bitrate %q: %v prints %q, reads back %v (%v)", s, float64(r), r.String(), float64(back), err)
			}
		}
		if z, err := ParseSize(s); err == nil {
			if back, err := ParseSize(z.String()); err != nil || back != z {
				t.Errorf("size %q: %d prints %q, reads back %d (%v)", s, z, z.String(), back, err)
			}
		}
		if r, err := ParseRatio(s); err == nil {
			if back, err := ParseRatio(r.String()); err != nil || !near(float64(back), float64(r)) {
				t.Errorf("ratio %q: %v prints %q, reads back %v (%v)", s, float64(r), r.String(), float64(back), err)
			}
		}
	})
}
