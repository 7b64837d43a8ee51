package emu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"tlab/internal/units"
)

// WiFiConfig is an 802.11 link layer: a frame error rate on the air and the
// MAC's retransmissions (DCF). Each attempt fails with probability
// FrameErrorRate; a failed attempt costs its airtime, the ACK timeout, a
// DIFS and a random backoff before the retry; only a frame whose Retries
// retries all failed is lost to the transport, so the residual loss is
// FER^(Retries+1) and each retry adds delay. With HalfDuplex the two
// directions share the air: one frame on the air at a time.
//
// The defaults are the OFDM PHY's (802.11a/g/n/ac, 802.11-2020 Table 17-21
// and 10.3.2.3): aSlotTime 9 µs, aSIFSTime 16 µs, DIFS = SIFS + 2 slots =
// 34 µs, aCWmin 15, aCWmax 1023, ACKTimeout = SIFS + slot +
// aRxPHYStartDelay (25 µs) = 50 µs. The contention window doubles after each
// failure: before retry k the backoff is uniform in [0, min(2^k·16 − 1,
// 1023)] slots.
type WiFiConfig struct {
	FrameErrorRate units.Ratio    `yaml:"frame_error_rate" json:"frame_error_rate,omitempty"`
	Retries        int            `yaml:"retries" json:"retries,omitempty"`
	Slot           units.Duration `yaml:"slot" json:"slot,omitempty"`
	SIFS           units.Duration `yaml:"sifs" json:"sifs,omitempty"`
	ACKTimeout     units.Duration `yaml:"ack_timeout" json:"ack_timeout,omitempty"`
	CWMin          int            `yaml:"cw_min" json:"cw_min,omitempty"`
	CWMax          int            `yaml:"cw_max" json:"cw_max,omitempty"`
	HalfDuplex     bool           `yaml:"half_duplex" json:"half_duplex,omitempty"`
}

// 802.11 OFDM PHY defaults.
const (
	WiFiSlot       = 9 * time.Microsecond
	WiFiSIFS       = 16 * time.Microsecond
	WiFiACKTimeout = 50 * time.Microsecond
	WiFiCWMin      = 15
	WiFiCWMax      = 1023
	// WiFiMaxRetries bounds the retry limit (dot11ShortRetryLimit is 7).
	WiFiMaxRetries = 15
)

// Enabled tells whether the config models a MAC at all.
func (w WiFiConfig) Enabled() bool { return w != WiFiConfig{} }

// withDefaults fills the PHY's timings.
func (w WiFiConfig) withDefaults() WiFiConfig {
	if w.Slot == 0 {
		w.Slot = units.Duration(WiFiSlot)
	}
	if w.SIFS == 0 {
		w.SIFS = units.Duration(WiFiSIFS)
	}
	if w.ACKTimeout == 0 {
		w.ACKTimeout = units.Duration(WiFiACKTimeout)
	}
	if w.CWMin == 0 {
		w.CWMin = WiFiCWMin
	}
	if w.CWMax == 0 {
		w.CWMax = WiFiCWMax
	}
	return w
}

// Validate checks the parameters.
func (w WiFiConfig) Validate() error {
	if !w.Enabled() {
		return nil
	}
	w = w.withDefaults()
	switch {
	case w.FrameErrorRate < 0 || w.FrameErrorRate >= 1:
		return fmt.Errorf("wifi: frame_error_rate %v: want 0 to below 100%%", w.FrameErrorRate)
	case w.Retries < 0 || w.Retries > WiFiMaxRetries:
		return fmt.Errorf("wifi: retries %d: want 0 to %d", w.Retries, WiFiMaxRetries)
	case w.Slot < 0 || w.SIFS < 0 || w.ACKTimeout < 0:
		return errors.New("wifi: slot, sifs and ack_timeout must not be negative")
	case w.CWMin < 1 || w.CWMax < w.CWMin:
		return fmt.Errorf("wifi: cw_min %d, cw_max %d: want 1 ≤ cw_min ≤ cw_max", w.CWMin, w.CWMax)
	}
	return nil
}

// DIFS is SIFS plus two slots.
func (w WiFiConfig) DIFS() time.Duration { return w.SIFS.D() + 2*w.Slot.D() }

// CW is the contention window before retry k (from 1).
func (w WiFiConfig) CW(k int) int {
	cw := (w.CWMin + 1) << min(k, 20)
	return min(cw-1, w.CWMax)
}

// ExpectedRetryCost is the mean airtime a failed attempt of a frame of
// airtime tx adds before retry k: the failed transmission, the ACK
// timeout, a DIFS and the mean backoff.
func (w WiFiConfig) ExpectedRetryCost(tx time.Duration, k int) time.Duration {
	w = w.withDefaults()
	return tx + w.ACKTimeout.D() + w.DIFS() + time.Duration(float64(w.CW(k))/2*float64(w.Slot.D()))
}

// ResidualLoss is the loss the transport sees: FER^(retries+1).
func (w WiFiConfig) ResidualLoss() float64 {
	return math.Pow(float64(w.FrameErrorRate), float64(w.Retries+1))
}

// wifiMAC draws each frame's attempts. It draws the same count of numbers
// for every frame (one per possible attempt, one per possible backoff), so
// the k-th frame's fate does not depend on earlier frames.
type wifiMAC struct {
	cfg WiFiConfig
	rng *rand.Rand
}

func newWiFiMAC(cfg WiFiConfig, rng *rand.Rand) *wifiMAC {
	return &wifiMAC{cfg: cfg.withDefaults(), rng: rng}
}

// attempt returns how many retries a frame of airtime txNs needed, the
// extra airtime they cost (ns) and whether the frame was lost after the
// last one. It runs on the engine's path for every frame: no allocation.
func (m *wifiMAC) attempt(txNs float64) (retries int, extraNs float64, lost bool) {
	c := m.cfg
	fer := float64(c.FrameErrorRate)
	// Every possible attempt draws, so the number of draws per frame does
	// not depend on the outcome; failed counts attempts before the first
	// success.
	failed, success := 0, false
	for a := 0; a <= c.Retries; a++ {
		if m.rng.Float64() >= fer && !success {
			success = true
		} else if !success {
			failed++
		}
	}
	lost = !success
	slot, difs := float64(c.Slot.D().Nanoseconds()), float64(c.DIFS().Nanoseconds())
	// Each failed attempt costs its airtime and the ACK timeout; each
	// retry k a DIFS and a backoff in [0, CW_k] slots (drawn for every k).
	extraNs = float64(failed) * (txNs + float64(c.ACKTimeout.D().Nanoseconds()))
	for k := 1; k <= c.Retries; k++ {
		backoff := m.rng.IntN(c.CW(k) + 1)
		if k <= failed {
			extraNs += difs + float64(backoff)*slot
			retries++
		}
	}
	if lost {
		// The last failed attempt's airtime is already in the frame's own
		// transmission time: do not count it twice.
		extraNs -= txNs
	}
	return retries, extraNs, lost
}
