package cross

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPacerRefusesRatesItCannotKeep: a line slower than MinPaceBps (the
// 1e-9 bit/s a hostile controller once asked of a fill), or not a finite
// rate, is refused: a send's time on it would not be a Duration.
func TestPacerRefusesRatesItCannotKeep(t *testing.T) {
	for _, bps := range []float64{1e-9, 0, -1, MinPaceBps - 1, math.NaN(), math.Inf(1)} {
		if _, err := NewPacer(bps); err == nil {
			t.Errorf("a line of %g bit/s was made", bps)
		}
	}
	if _, err := NewPacer(MinPaceBps); err != nil {
		t.Errorf("a line at the floor: %v", err)
	}
}

// TestPacerIsOneLineForAll: four senders sharing one 8 Mbit/s line send
// together what the line carries: 8e6 / 8 B/s x 0.5 s = 500 kB in half a
// second (one 16 KiB send each may be under way at the end: 10 % slack),
// not four times it. A send beyond MaxPaceSend costs MaxPaceSend's time,
// never a negative one.
func TestPacerIsOneLineForAll(t *testing.T) {
	p, err := NewPacer(8e6)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for p.Wait(ctx, 16<<10) {
				sent.Add(16 << 10)
			}
		})
	}
	wg.Wait()
	if got, want := sent.Load(), int64(500_000); got > want*11/10 || got < want/2 {
		t.Errorf("four senders on one 8 Mbit/s line sent %d bytes in 0.5 s, want about %d", got, want)
	}
	slow, _ := NewPacer(MinPaceBps)
	slow.Wait(context.Background(), 0)
	before := slow.next
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	slow.Wait(ctx2, math.MaxInt)
	// MaxPaceSend bytes at MinPaceBps: 2^20 x 8 / 1000 s.
	if got, want := slow.next.Sub(before), time.Duration(float64(MaxPaceSend)*8/MinPaceBps*float64(time.Second)); got < want-time.Second || got > want+time.Second {
		t.Errorf("a send of MaxInt bytes took %v of the line, want MaxPaceSend's %v", got, want)
	}
}
