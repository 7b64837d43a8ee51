package flowsim

import (
	"fmt"
	"time"
)

// GainPoint is one link of a gain map: the transfer's throughput under
// autotuning and under fast autotuning on it, and fast's gain.
type GainPoint struct {
	RateBps  float64       `json:"rate_bps"`
	RTT      time.Duration `json:"rtt_ns"`
	BaseMbps float64       `json:"autotuning_mbps"`
	FastMbps float64       `json:"fast_autotuning_mbps"`
	// GainPct is (fast / autotuning − 1) · 100: above 0, fast autotuning
	// moved the data faster on this link.
	GainPct float64 `json:"gain_pct"`
}

// MapRates and MapRTTs are a gain map's default grid: 10 Mbit/s to
// 1 Gbit/s, 10 to 200 ms, about evenly on a log scale.
var (
	MapRates = []float64{10e6, 20e6, 50e6, 100e6, 200e6, 500e6, 1e9}
	MapRTTs  = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
)

// GainMap runs c under autotuning and fast autotuning on every link of
// rates × rtts (everything else as c has it) and returns the points, RTT
// by RTT, rate by rate: where on that plane fast autotuning pays off, so
// that one scenario's link is seen as one point among them.
func GainMap(c Config, rates []float64, rtts []time.Duration) ([]GainPoint, error) {
	var out []GainPoint
	for _, rtt := range rtts {
		for _, rate := range rates {
			cfg := c
			cfg.Rate, cfg.OneWay = rate, rtt/2
			cfg.Name = fmt.Sprintf("%s@%gMbit/%v", c.Name, rate/1e6, rtt)
			base, err := Run(cfg, Autotuning{})
			if err != nil {
				return nil, err
			}
			fast, err := Run(cfg, FastAutotuning{})
			if err != nil {
				return nil, err
			}
			out = append(out, GainPoint{RateBps: rate, RTT: rtt, BaseMbps: base.ThroughputMbps, FastMbps: fast.ThroughputMbps,
				GainPct: (fast.ThroughputMbps/base.ThroughputMbps - 1) * 100})
		}
	}
	return out, nil
}
