package flowsim

import (
	"slices"
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
	// Past the first two updates, which hold (FirstUpdateStudy).
	w := &Window{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 16 * kb, LastUpdate: 10 * time.Millisecond, Updates: 2}
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
// 50 %: factor 4, capped). The example grows at the first update, so it
// runs under the start rule (its simulation's figures hold twice instead:
// TestStudyRuleHoldsTheFirstTwoUpdates).
func TestFastAutotuningStudyExample(t *testing.T) {
	stream := &Window{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 128 * kb}
	stream.Occupancy = float64(stream.Size) / float64(stream.Upper) * 100
	if !consumeTo(FastAutotuning{First: FirstUpdateStart}, stream, 3*kb, 5*time.Millisecond) || stream.Size != 64*kb {
		t.Fatalf("first update: window %d KB, want 64", stream.Size/kb)
	}
	if stream.MaxOffset != 3*kb+64*kb {
		t.Fatalf("max offset %d, want consumed + window", stream.MaxOffset)
	}
	stream.Occupancy = float64(stream.Size) / float64(stream.Upper) * 100
	if !consumeTo(FastAutotuning{First: FirstUpdateStart}, stream, stream.MaxOffset-1, 20*time.Millisecond) || stream.Size != 128*kb {
		t.Fatalf("second update: window %d KB, want 128", stream.Size/kb)
	}
	// The connection: 8 KB towards 256 KB, occupancy from the streams'
	// windows (4 KB of 256 KB: under 25 %, factor 16).
	conn := &Window{MaxOffset: 8 * kb, Size: 8 * kb, Upper: 256 * kb, Occupancy: 4.0 / 256 * 100}
	if !consumeTo(FastAutotuning{First: FirstUpdateStart}, conn, 5*kb, 5*time.Millisecond) || conn.Size != 128*kb {
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
		{Autotuning{First: FirstUpdateHold}, 4 * kb},
		{Autotuning{First: FirstUpdateFirstRead}, 8 * kb},
		{Autotuning{First: FirstUpdateStart}, 4 * kb},
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
	for _, name := range []string{"autotuning@first-read", "fast-autotuning@hold", "autotuning@start", "fast-autotuning@start", "autotuning@hold"} {
		a, err := LookupAllowance(name)
		if err != nil || a.Name() != name {
			t.Errorf("%s: got %v, %v", name, a, err)
		}
	}
	for _, own := range []string{"autotuning", "fast-autotuning"} {
		if a, _ := LookupAllowance(own + "@study"); a.Name() != own {
			t.Errorf("%s's own rule named %q, want plain %s", own, a.Name(), own)
		}
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

// TestStudyRuleHoldsTheFirstTwoUpdates works the study's scenario 1 by
// hand (studies.md, study C; its Figs. 7b-9b): two streams, windows 4 KB,
// stream upper bound 16 KB, RTT 150 ms, each stream's updates one RTT
// apart (well within 2 RTT). Both allowances hold at the first and the
// second update; at the third autotuning doubles each stream (4 -> 8 KB,
// the streams' sum 8 -> 16 KB) and fast autotuning multiplies by 8
// (occupancy 4/16 = 25 %: F = 8), capped at 16 KB (sum 32 KB); at the
// fourth autotuning doubles again (8 -> 16 KB), and between the two
// streams' fourth updates the sum reads 16 + 8 = 24 KB, then 32 KB.
func TestStudyRuleHoldsTheFirstTwoUpdates(t *testing.T) {
	const rtt = 150 * time.Millisecond
	for _, tc := range []struct {
		a    Allowance
		want []int64 // each stream's window after updates 1..4, KB
		sums []int64 // the streams' sum after each stream's update, KB
	}{
		{Autotuning{}, []int64{4, 4, 8, 16}, []int64{8, 8, 8, 8, 12, 16, 24, 32}},
		{FastAutotuning{}, []int64{4, 4, 16, 16}, []int64{8, 8, 8, 8, 20, 32, 32, 32}},
	} {
		streams := []*Window{
			{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 16 * kb},
			{MaxOffset: 4 * kb, Size: 4 * kb, Upper: 16 * kb},
		}
		var sums []int64
		for u := range 4 {
			for i, w := range streams {
				// Stream i's update u at (u+1) RTT plus i ms: one
				// RTT after its previous one.
				now := time.Duration(u+1)*rtt + time.Duration(i)*time.Millisecond
				w.Occupancy = float64(w.Size) / float64(w.Upper) * 100
				w.Consumed = w.MaxOffset - w.Size/2 + 1 // W_avail just under half
				if !tc.a.Update(w, now, rtt, 1350) {
					t.Fatalf("%s: stream %d's update %d not sent", tc.a.Name(), i, u+1)
				}
				if w.Size != tc.want[u]*kb {
					t.Errorf("%s: stream %d after update %d: %d KB, want %d", tc.a.Name(), i, u+1, w.Size/kb, tc.want[u])
				}
				sums = append(sums, (streams[0].Size+streams[1].Size)/kb)
			}
		}
		if !slices.Equal(sums, tc.sums) {
			t.Errorf("%s: the streams' summed window %v KB, want %v", tc.a.Name(), sums, tc.sums)
		}
	}
}
