package emu

import (
	"math"
	"testing"
	"time"

	"tlab/internal/units"
)

// wifiDirection is a 20 Mbit/s direction with the 802.11 model and no
// propagation delay, so that a lone frame's delay is its airtime.
func wifiDirection(t *testing.T, w WiFiConfig, seed uint64) *Direction {
	t.Helper()
	return mustDirection(t, DirectionConfig{Rate: units.Bitrate(20e6), WiFi: w}, seed)
}

// expectedWiFiDelay is the mean delay of a delivered lone frame of airtime
// tx with frame error rate fer and a retry limit, from 802.11-2020's OFDM
// PHY figures written out here (Table 17-21, 10.3.2.3), not the model's:
// aSlotTime 9 µs, aSIFSTime 16 µs, DIFS = SIFS + 2 slots = 34 µs,
// ACKTimeout = SIFS + slot + aRxPHYStartDelay 25 µs = 50 µs, and a
// contention window of 16·2^k − 1 slots before retry k (at most aCWmax
// 1023), whose backoff is uniform, half of it on average. Attempt a
// succeeds with probability fer^a·(1−fer), after a failed attempts.
func expectedWiFiDelay(fer float64, retries int, tx time.Duration) float64 {
	const slot, difs, ackTimeout = 9e3, 34e3, 50e3 // ns
	var num, den float64
	for a := 0; a <= retries; a++ {
		p := math.Pow(fer, float64(a)) * (1 - fer)
		cost := float64(tx)
		for k := 1; k <= a; k++ {
			cw := math.Min(16*math.Pow(2, float64(k))-1, 1023)
			cost += float64(tx) + ackTimeout + difs + cw/2*slot
		}
		num += p * cost
		den += p
	}
	return num / den
}

// TestWiFiResidualLossAndRetryDelay drives lone frames (spaced so that
// none waits for another) through the 802.11 model for retry limits 0 to
// 3: the loss the transport sees is FER^(R+1) and the mean delay of a
// delivered frame is its airtime plus the expected cost of its retries,
// each within a 99 % interval of its sampling error.
func TestWiFiResidualLossAndRetryDelay(t *testing.T) {
	const n, size = 200000, 1000
	tx := time.Duration(float64(size) * 8 / 20e6 * 1e9) // 400 µs
	for _, retries := range []int{0, 1, 2, 3} {
		w := WiFiConfig{FrameErrorRate: 0.3, Retries: retries}
		d := wifiDirection(t, w, 5)
		lost, delivered := 0, 0
		var sum, sumSq float64
		for i := 0; i < n; i++ {
			now := int64(i) * int64(100*time.Millisecond) // far apart
			v := admit(d, now, size)
			switch v.Drop {
			case DropRetries:
				lost++
			case Delivered:
				delivered++
				x := float64(v.Release - now)
				sum += x
				sumSq += x * x
			default:
				t.Fatalf("frame %d dropped for %v", i, v.Drop)
			}
		}
		p := math.Pow(0.3, float64(retries+1)) // every attempt failed
		got := float64(lost) / n
		if half := z99 * math.Sqrt(p*(1-p)/n); !(math.Abs(got-p) <= half+1e-12) {
			t.Errorf("retries %d: residual loss %.5f, want %.5f ± %.5f", retries, got, p, half)
		}
		mean := sum / float64(delivered)
		sd := math.Sqrt(sumSq/float64(delivered) - mean*mean)
		want := expectedWiFiDelay(0.3, retries, tx)
		if half := z99*sd/math.Sqrt(float64(delivered)) + 1; !(math.Abs(mean-want) <= half) {
			t.Errorf("retries %d: mean delay %.1f µs, want %.1f ± %.1f µs", retries, mean/1e3, want/1e3, half/1e3)
		}
		if retries > 0 && d.Stats.WiFiRetries == 0 {
			t.Errorf("retries %d: no retry counted", retries)
		}
		if d.Stats.DropRetries != uint64(lost) {
			t.Errorf("retries %d: %d frames counted as lost after the retry limit, saw %d", retries, d.Stats.DropRetries, lost)
		}
	}
}

// TestWiFiRetriesAreSeeded: the same seed gives the same fates and
// delays, another seed others.
func TestWiFiRetriesAreSeeded(t *testing.T) {
	w := WiFiConfig{FrameErrorRate: 0.4, Retries: 2}
	run := func(seed uint64) []int64 {
		d := wifiDirection(t, w, seed)
		var out []int64
		for i := 0; i < 2000; i++ {
			now := int64(i) * int64(10*time.Millisecond)
			v := admit(d, now, 500)
			out = append(out, v.Release-now, int64(v.Drop))
		}
		return out
	}
	a, b, c := run(1), run(1), run(2)
	same := func(x, y []int64) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("the same seed gave different retry patterns")
	}
	if same(a, c) {
		t.Error("different seeds gave the same retry pattern")
	}
}

// TestWiFiHalfDuplexSharesTheAir: with half_duplex a frame in one
// direction waits for the frame on the air in the other; without, the
// directions are independent.
func TestWiFiHalfDuplexSharesTheAir(t *testing.T) {
	const size = 1250 // 500 µs at 20 Mbit/s
	for _, half := range []bool{false, true} {
		dir := DirectionConfig{Rate: units.Bitrate(20e6), WiFi: WiFiConfig{HalfDuplex: half, Retries: 1}}
		up, down, err := NewLink(LinkConfig{Up: dir, Down: dir}, 1, "air", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		u := admit(up, 0, size)
		dn := admit(down, 0, size)
		if u.Release != 500_000 {
			t.Fatalf("half %v: the up frame left at %d ns, want 500000", half, u.Release)
		}
		want := int64(500_000)
		if half {
			want = 1_000_000
		}
		if dn.Release != want {
			t.Errorf("half %v: the down frame left at %d ns, want %d", half, dn.Release, want)
		}
	}
	bad := LinkConfig{Up: DirectionConfig{Rate: units.Bitrate(20e6), WiFi: WiFiConfig{HalfDuplex: true}}, Down: DirectionConfig{Rate: units.Bitrate(10e6)}}
	if err := bad.Validate(); err == nil {
		t.Error("a half-duplex link with one direction not half-duplex was accepted")
	}
	if err := (DirectionConfig{WiFi: WiFiConfig{Retries: 2}}).Validate(); err == nil {
		t.Error("the 802.11 model without a rate was accepted")
	}
	if err := (DirectionConfig{Rate: units.Bitrate(1e6), WiFi: WiFiConfig{FrameErrorRate: 1}}).Validate(); err == nil {
		t.Error("a frame error rate of 100 % was accepted")
	}
}

// TestWiFiAdmitDoesNotAllocate: the 802.11 model runs for every frame on
// the engine's loop, which must not make garbage.
func TestWiFiAdmitDoesNotAllocate(t *testing.T) {
	d := wifiDirection(t, WiFiConfig{FrameErrorRate: 0.3, Retries: 3}, 1)
	now := int64(0)
	var n int
	emit := func(int32, Verdict) { n++ }
	if a := testing.AllocsPerRun(1000, func() {
		now += int64(10 * time.Millisecond)
		d.Offer(now, Frame{Size: 1000}, emit)
		d.Transmit(now+int64(time.Millisecond), emit)
	}); a != 0 || n < 1000 {
		t.Errorf("Offer and Transmit allocate %.1f times per frame (%d verdicts)", a, n)
	}
}
