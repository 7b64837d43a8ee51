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
	w := &Window{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 16 * kb, LastUpdate: 10 * time.Millisecond, Updates: 1}
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

// TestFirstUpdateRules checks the three readings of an update that has no
// previous one, each in its source's words:
//   - hold, Chromium's net/quic flow controller (2016): "if
//     (!prev.IsInitialized()) { ... first window update ...; return; }";
//   - first-read, quiche's today: "Treat the initial window as if it is a
//     window update, so if 1/2 the window is used in less than 2 RTTs, the
//     window is increased", timed from the first data read;
//   - start, the study's worked example: the first update already grows.
//
// The receiver reads its first data at 50 ms and half its window at 80 ms
// (RTT 20 ms): 80 ms from the start, 30 ms from the first read.
func TestFirstUpdateRules(t *testing.T) {
	for _, tc := range []struct {
		a    Allowance
		want int64
	}{
		{Autotuning{}, 4 * kb}, // its own rule: hold
		{Autotuning{First: FirstUpdateHold}, 4 * kb},
		{Autotuning{First: FirstUpdateFirstRead}, 8 * kb},
		{Autotuning{First: FirstUpdateStart}, 4 * kb},
		{FastAutotuning{}, 4 * kb}, // its own rule: start
		{FastAutotuning{First: FirstUpdateHold}, 4 * kb},
		{FastAutotuning{First: FirstUpdateFirstRead}, 16 * 4 * kb},
		{FastAutotuning{First: FirstUpdateStart}, 4 * kb},
	} {
		w := &Window{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 1024 * kb, FirstRead: 50 * time.Millisecond}
		if !consumeTo(tc.a, w, 3*kb, 80*time.Millisecond) || w.Size != tc.want {
			t.Errorf("%s: window %d KB after the first update, want %d", tc.a.Name(), w.Size/kb, tc.want/kb)
		}
		// Every later update is timed from the previous one, whatever the rule.
		consumeTo(tc.a, w, w.MaxOffset-1, 90*time.Millisecond)
		if w.Size <= tc.want {
			t.Errorf("%s: second update 10 ms after the first did not grow", tc.a.Name())
		}
	}
	// Start, read early enough: the first update grows.
	w := &Window{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 1024 * kb, FirstRead: 10 * time.Millisecond}
	if consumeTo(Autotuning{First: FirstUpdateStart}, w, 3*kb, 30*time.Millisecond); w.Size != 8*kb {
		t.Errorf("autotuning@start: first update 30 ms from the start kept %d KB", w.Size/kb)
	}
	w = &Window{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 1024 * kb, FirstRead: 10 * time.Millisecond}
	if consumeTo(Autotuning{First: FirstUpdateHold}, w, 3*kb, 30*time.Millisecond); w.Size != 4*kb {
		t.Errorf("autotuning@hold: first update grew to %d KB", w.Size/kb)
	}
}

func TestAllowanceNamesCarryTheirFirstUpdateRule(t *testing.T) {
	for _, name := range []string{"autotuning@first-read", "fast-autotuning@hold", "autotuning@start"} {
		a, err := LookupAllowance(name)
		if err != nil || a.Name() != name {
			t.Errorf("%s: got %v, %v", name, a, err)
		}
	}
	if a, _ := LookupAllowance("autotuning@hold"); a.Name() != "autotuning" {
		t.Errorf("autotuning's own rule named %q, want plain autotuning", a.Name())
	}
	for _, bad := range []string{"static@hold", "autotuning@soon", "quic-go@start"} {
		if _, err := LookupAllowance(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestSimulatorTimesFirstReadFromTheApplicationsFirstRead runs a slow
// reader (4 KB in 35 ms, 20 ms RTT): the connection's first update comes
// more than two RTTs after the start but less than two after the first
// read, so only the first-read rule grows the window there.
func TestSimulatorTimesFirstReadFromTheApplicationsFirstRead(t *testing.T) {
	for rule, wantGrew := range map[FirstUpdate]bool{FirstUpdateHold: false, FirstUpdateFirstRead: true, FirstUpdateStart: false} {
		cfg := Scenarios()["small-buffer"][0]
		cfg.OneWay, cfg.ConsumeRate = 10*time.Millisecond, 4*kb/0.035
		res, err := Run(cfg, Autotuning{First: rule})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range res.Updates {
			if u.Stream == -1 {
				if u.Grew != wantGrew {
					t.Errorf("%s: the connection's first update at %v grew = %v, want %v", rule, u.T, u.Grew, wantGrew)
				}
				break
			}
		}
	}
}
