package flowsim

import (
	"testing"
	"time"
)

// TestQuicGoHandWorked follows quic-go's rules step by step: an update once
// a quarter of the window is consumed, growth judged only after half a
// window has been read in the epoch, and doubling only when that took less
// than 4 × fraction × RTT.
func TestQuicGoHandWorked(t *testing.T) {
	a := QuicGo{}
	w := &Window{MaxOffset: 8 * kb, Size: 8 * kb, Upper: 64 * kb}
	steps := []struct {
		consumed   int64
		at         time.Duration
		wantUpdate bool
		wantSize   int64
		wantOffset int64
	}{
		{1 * kb, 1 * time.Millisecond, false, 8 * kb, 8 * kb},                        // 7K left of 8K: over three quarters
		{2*kb + 1, 2 * time.Millisecond, true, 8 * kb, 10*kb + 1},                    // a quarter consumed; 2K read in the epoch: no judgement
		{4*kb + 1, 5 * time.Millisecond, true, 16 * kb, 20*kb + 1},                   // half read in 5 ms < 4 × 0.5 × 20 ms: doubles
		{12 * kb, 200 * time.Millisecond, true, 16 * kb, 28 * kb},                    // new epoch holds 8K-1: not over half of 16K
		{16 * kb, 300 * time.Millisecond, true, 16 * kb, 32 * kb},                    // 12K-1 in 295 ms > 60 ms: kept
		{16*kb + 4*kb + 1, 301 * time.Millisecond, true, 16 * kb, 36*kb + 1},         // epoch restarted at 16K: 4K+1 read
		{16*kb + 8*kb + 1, 302 * time.Millisecond, true, 32 * kb, 24*kb + 1 + 32*kb}, // 8K+1 in 2 ms: doubles
	}
	for i, s := range steps {
		w.Consumed = s.consumed
		got := a.Update(w, s.at, 20*time.Millisecond, 1350)
		if got != s.wantUpdate || w.Size != s.wantSize || w.MaxOffset != s.wantOffset {
			t.Fatalf("step %d (consumed %d at %v): update %v size %d offset %d; want %v %d %d",
				i, s.consumed, s.at, got, w.Size, w.MaxOffset, s.wantUpdate, s.wantSize, s.wantOffset)
		}
	}
}

func TestQuicGoStaticNeverGrows(t *testing.T) {
	w := &Window{MaxOffset: 8 * kb, Size: 8 * kb, Upper: 8 * kb}
	updates := 0
	for c := int64(1); c <= 80*kb; c += 64 {
		w.Consumed = c
		if (QuicGo{}).Update(w, time.Duration(c), 20*time.Millisecond, 1350) {
			updates++
		}
		if w.Size != 8*kb {
			t.Fatalf("static window grew to %d", w.Size)
		}
	}
	// An update every quarter window (2K) of 80K: about 40.
	if updates < 35 || updates > 41 {
		t.Fatalf("%d updates over 80K with a 8K window, want about 40", updates)
	}
}

func TestQuicGoConnectionFollowsStream(t *testing.T) {
	conn := &Window{Size: 8 * kb, Upper: 64 * kb, Consumed: 3 * kb}
	(QuicGo{}).StreamGrew(conn, &Window{Size: 16 * kb}, 7*time.Millisecond)
	if conn.Size != 24*kb || conn.EpochStart != 7*time.Millisecond || conn.EpochOffset != 3*kb {
		t.Fatalf("after a 16K stream window: %+v, want 24K and a new epoch", *conn)
	}
	(QuicGo{}).StreamGrew(conn, &Window{Size: 64 * kb}, 9*time.Millisecond)
	if conn.Size != 64*kb {
		t.Fatalf("connection window %d, want capped at 64K", conn.Size)
	}
	(QuicGo{}).StreamGrew(conn, &Window{Size: 8 * kb}, 10*time.Millisecond)
	if conn.Size != 64*kb || conn.EpochStart != 9*time.Millisecond {
		t.Fatal("a small stream window shrank the connection window or restarted its epoch")
	}
}
