package flowsim

import (
	"testing"
	"time"
)

const kb = 1024

// consumeTo advances consumption and asks the allowance, as the receiver
// does after every read.
func consumeTo(a Allowance, w *Window, consumed int64, now time.Duration) bool {
	w.Consumed = consumed
	return a.Update(w, now, 20*time.Millisecond, 1350)
}

func TestStaticUpdatesAtHalfWindow(t *testing.T) {
	w := &Window{MaxOffset: 16 * kb, Size: 16 * kb, Upper: 16 * kb}
	if consumeTo(Static{}, w, 8*kb, 0) {
		t.Fatal("update with exactly half the window still available")
	}
	if !consumeTo(Static{}, w, 8*kb+1, 0) || w.MaxOffset != 24*kb+1 || w.Size != 16*kb {
		t.Fatalf("after consuming past half: %+v", *w)
	}
}

func TestImprovedStaticUpdatesOneMSSEarlier(t *testing.T) {
	w := &Window{MaxOffset: 16 * kb, Size: 16 * kb, Upper: 16 * kb}
	// Available 16K - 6.7K = 9.3K < 8K + 1350: update.
	if !consumeTo(ImprovedStatic{}, w, 16*kb-9500, 0) {
		t.Fatal("improved static waited past half the window minus one MSS")
	}
	w2 := &Window{MaxOffset: 16 * kb, Size: 16 * kb, Upper: 16 * kb}
	if consumeTo(Static{}, w2, 16*kb-9500, 0) {
		t.Fatal("static updated before half the window")
	}
}

func TestAutotuningDoublesOnlyWithinTwoRTT(t *testing.T) {
	w := &Window{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 16 * kb, LastUpdate: 10 * time.Millisecond}
	consumeTo(Autotuning{}, w, 3*kb, 30*time.Millisecond) // 20 ms since: < 40 ms
	if w.Size != 8*kb {
		t.Fatalf("window %d after a quick update, want 8K", w.Size)
	}
	consumeTo(Autotuning{}, w, 3*kb+5*kb, 200*time.Millisecond) // 170 ms since: no growth
	if w.Size != 8*kb {
		t.Fatalf("window %d after a slow update, want it kept at 8K", w.Size)
	}
	for i := 0; i < 5; i++ {
		w.LastUpdate = 200 * time.Millisecond
		consumeTo(Autotuning{}, w, w.MaxOffset-1, 210*time.Millisecond)
	}
	if w.Size != 16*kb {
		t.Fatalf("window %d, want capped at the 16K upper bound", w.Size)
	}
}

// TestFastAutotuningStudyExample is the study's own example: stream upper
// bound 128 KB, connection upper bound 256 KB, initial windows 4 KB
// (stream) and 8 KB (connection): the first update sets the stream window
// to 64 KB (occupancy 3 %: factor 16), the second to 128 KB (occupancy
// 50 %: factor 4, capped).
func TestFastAutotuningStudyExample(t *testing.T) {
	stream := &Window{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 128 * kb}
	stream.Occupancy = float64(stream.Size) / float64(stream.Upper) * 100
	if !consumeTo(FastAutotuning{}, stream, 3*kb, 5*time.Millisecond) || stream.Size != 64*kb {
		t.Fatalf("first update: window %d KB, want 64", stream.Size/kb)
	}
	if stream.MaxOffset != 3*kb+64*kb {
		t.Fatalf("max offset %d, want consumed + window", stream.MaxOffset)
	}
	stream.Occupancy = float64(stream.Size) / float64(stream.Upper) * 100
	if !consumeTo(FastAutotuning{}, stream, stream.MaxOffset-1, 20*time.Millisecond) || stream.Size != 128*kb {
		t.Fatalf("second update: window %d KB, want 128", stream.Size/kb)
	}
	// The connection: 8 KB towards 256 KB, occupancy from the streams'
	// windows (4 KB of 256 KB: under 25 %, factor 16).
	conn := &Window{MaxOffset: 8 * kb, Size: 8 * kb, Upper: 256 * kb, Occupancy: 4.0 / 256 * 100}
	if !consumeTo(FastAutotuning{}, conn, 5*kb, 5*time.Millisecond) || conn.Size != 128*kb {
		t.Fatalf("connection's first update: %d KB, want 128", conn.Size/kb)
	}
}

func TestLookupAllowance(t *testing.T) {
	for _, a := range Allowances() {
		if b, err := LookupAllowance(a.Name()); err != nil || b.Name() != a.Name() {
			t.Errorf("%s: %v", a.Name(), err)
		}
	}
	if _, err := LookupAllowance("magic"); err == nil {
		t.Error("unknown allowance accepted")
	}
}
