package emu

import (
	"math/rand/v2"
	"testing"
)

// TestLeadFromWakeups checks the adaptive loop's lead against samples
// built by hand, each expected L worked out in its comment from the rule in
// leadFromWakeups: the nearest-rank p99 (the ceil(0.99 n)-th smallest)
// when it is within 250 µs; otherwise the Kneedle point of the wake-ups
// within 250 µs, s_i maximising D_i = i·(s_max − s_min) − (s_i − s_min)·(m − 1)
// over the m of them (i from 0, the first on a tie); bounded to [5, 250] µs.
func TestLeadFromWakeups(t *testing.T) {
	us := func(v ...int64) []int64 {
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = x * 1000
		}
		return out
	}
	cases := []struct {
		name    string
		samples []int64
		want    int64 // ns
	}{
		{
			// 1, 2, ..., 100 µs: the p99 is the 99th smallest, 99 µs,
			// within the bound: the p99 rule, no knee.
			name: "quiet host", samples: us(seq(1, 100)...), want: 99_000,
		},
		{
			// Ten samples: the p99 is the 10th smallest, the largest,
			// 250 µs: exactly the bound, still the p99 rule.
			name: "p99 at the bound", samples: us(10, 11, 12, 13, 14, 15, 16, 130, 200, 250), want: 250_000,
		},
		{
			// p99 = 900 µs > 250. Savable: 10..16, 130, 250 (m = 9,
			// s_min 10, s_max 250, span 240, m−1 = 8).
			// D_i = 240 i − 8 (s_i − 10): 0, 232, 464, 696, 928, 1160,
			// 1392 (16 µs), 720 (130 µs), 0 (250 µs): the knee is 16 µs.
			name: "idle exit then preemption", samples: us(130, 10, 900, 11, 250, 12, 13, 14, 15, 16), want: 16_000,
		},
		{
			// A plateau then a jump: 20, 20, 20, 20, 240 savable (m = 5,
			// span 220, m−1 = 4), 1000 past the bound, p99 = 1000.
			// D = 0, 220, 440, 660, 880 − 880 = 0: the last of the
			// plateau, 20 µs.
			name: "plateau", samples: us(20, 1000, 20, 240, 20, 20), want: 20_000,
		},
		{
			// A straight line of savable wake-ups (10, 20, 30, 40) and
			// one stall: D_i = 30 i − 3 (10 i) = 0 for every i, a tie:
			// the first, 10 µs.
			name: "no knee: the first of a tie", samples: us(40, 30, 20, 10, 5000), want: 10_000,
		},
		{
			// Savable 1, 2, 2, 3 µs (span 2, m−1 = 3): D = 0, 2−3 = −1,
			// 4−3 = 1, 6−6 = 0: the knee is 2 µs, under the floor: 5 µs.
			name: "knee under the floor", samples: us(1, 2, 2, 3, 800), want: minSpinNs,
		},
		{
			// Every wake-up past the bound: none a spin can save, the
			// floor.
			name: "all preempted", samples: us(300, 400, 5000), want: minSpinNs,
		},
		{
			// One savable wake-up, 40 µs, among stalls: that one.
			name: "one savable", samples: us(300, 40, 400), want: 40_000,
		},
	}
	for _, c := range cases {
		if got := leadFromWakeups(append([]int64(nil), c.samples...)); got != c.want {
			t.Errorf("%s: L = %d ns, want %d", c.name, got, c.want)
		}
	}
}

// TestWakeEstimateTakesTheKneeWhenTheTailIsPreemption: a full window of
// the loop's own wake-ups whose p99 is past the bound gives a lead at the
// knee, and keeps the spin (the bounded p99) at the bound. 256 samples: 200 of 20 µs, 20 of 40 µs, 10 of 100 µs, 26 of
// 2 ms. The p99 (254th smallest) is 2 ms > 250 µs: the spin is 250 µs. Savable: m = 230, span 80 µs, m−1 = 229; D_i = 80 i − 229
// (s_i − 20) in µs: the plateau's last (i = 199, 20 µs) gives 15 920; the
// 40 µs run's last (i = 219) 17 520 − 4580 = 12 940; the 100 µs run's
// last (i = 229) 18 320 − 18 320 = 0. The knee is 20 µs.
func TestWakeEstimateTakesTheKneeWhenTheTailIsPreemption(t *testing.T) {
	var window []int64
	for range 200 {
		window = append(window, 20_000)
	}
	for range 20 {
		window = append(window, 40_000)
	}
	for range 10 {
		window = append(window, 100_000)
	}
	for range 26 {
		window = append(window, 2_000_000)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(window), func(i, j int) { window[i], window[j] = window[j], window[i] })
	w := newWakeEstimate(nil)
	for _, v := range window {
		w.add(v)
	}
	if w.leadNs != 20_000 || w.spinNs != maxSpinNs {
		t.Errorf("lead %d ns, spin %d ns; want the knee, 20 µs, and the bound, 250 µs", w.leadNs, w.spinNs)
	}
}

func seq(from, to int64) []int64 {
	var out []int64
	for v := from; v <= to; v++ {
		out = append(out, v)
	}
	return out
}
