package analysis

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tlab/internal/emu"
	"tlab/internal/results"
)

// TestLinkPhasesLineUpMessagesWithChanges: a loop with a 100 ms period
// sends every 500 ms; its Wi-Fi goes down (both directions, one change) 2 s
// into the window and comes back at 3 s. By hand, with the window starting
// at 1 700 000 000 s on the wall clock:
//   - 0-2 s: 4 messages (0, 0.5, 1, 1.5 s), each answered in 20 ms:
//     none failed or missed, median 20, completions at 0.02, 0.52, 1.02,
//     1.52 s, so the longest stretch without one is 0.5 s;
//   - 2-3 s: 2 messages, both failed (and so missed), no completion in
//     the phase (the next comes at 3.15 s): a gap of the whole 1 s;
//   - 3-3.52 s (the last completion): 2 messages, one answered in 150 ms
//     (missed: past its 100 ms period) and one in 20 ms, median 85;
//     completions at 3.15 and 3.52 s: the longest gap 0.37 s.
//
// The warm-up's record and the link's settings at its start (before the
// window) are left out.
func TestLinkPhasesLineUpMessagesWithChanges(t *testing.T) {
	dir := t.TempDir()
	const base = int64(1_700_000_000_000_000_000)
	at := func(s float64) string { return strconv.FormatInt(base+int64(math.Round(s*1e9)), 10) }
	recs := "cell,warmup,error,sent_ms,sent_unix_ns,done_ms,delay_ms\n" +
		"c1,true,,-500," + at(-0.5) + ",-480,20\n"
	type m struct {
		sent  float64
		delay float64 // 0: failed
	}
	for _, r := range []m{{0, 20}, {0.5, 20}, {1, 20}, {1.5, 20}, {2, 0}, {2.5, 0}, {3, 150}, {3.5, 20}} {
		sentMs := ftoa(r.sent * 1000)
		if r.delay == 0 {
			recs += "c1,false,timeout," + sentMs + "," + at(r.sent) + ",,\n"
			continue
		}
		recs += "c1,false,," + sentMs + "," + at(r.sent) + "," + ftoa(r.sent*1000+r.delay) + "," + ftoa(r.delay) + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, results.RecordsFile), []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	cell := results.CellDir(dir, "c1")
	if err := os.MkdirAll(cell, 0o755); err != nil {
		t.Fatal(err)
	}
	ev := "link,direction,source,link_ms,window_ms,ramp_ms,delay_ms,jitter_ms,loss_pct,rate_mbit,queue_packets,queue_bytes,unix_ns\n" +
		"wifi,up,start,0,-500,0,10,0,0,0,0,0," + at(-0.5) + "\n" +
		"wifi,up,handover,2500,2000,0,10,0,100,0,0,0," + at(2) + "\n" +
		"wifi,down,handover,2500,2000,0,10,0,100,0,0,0," + at(2) + "\n" +
		"wifi,up,handover,3500,3000,0,10,0,0,0,0,0," + at(3) + "\n"
	if err := os.WriteFile(filepath.Join(cell, emu.LinkEventsFile), []byte(ev), 0o644); err != nil {
		t.Fatal(err)
	}
	row := results.Summary{Cell: "c1", Protocol: "tcp", Profile: "wifi", Rep: 1, Fields: []results.Field{{Name: "interval_ms", Value: 100.0}}}
	a, err := OfView(NewView(&results.Run{Dir: dir, Rows: []results.Summary{row}}, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	phases, _ := a.Output("link-phases").([]LinkPhase)
	if len(phases) != 3 {
		t.Fatalf("%d phases, want 3: %+v", len(phases), phases)
	}
	want := []LinkPhase{
		{Index: 0, FromS: 0, ToS: 2, Messages: 4, Failed: 0, Missed: 0, MedianMs: 20, LongestGapS: 0.5},
		{Index: 1, FromS: 2, ToS: 3, Messages: 2, Failed: 2, Missed: 2, MedianMs: math.NaN(), LongestGapS: 1},
		{Index: 2, FromS: 3, ToS: 3.52, Messages: 2, Failed: 0, Missed: 1, MedianMs: 85, LongestGapS: 0.37},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 || math.IsNaN(a) && math.IsNaN(b) }
	for i, w := range want {
		g := phases[i]
		if g.Index != w.Index || !near(g.FromS, w.FromS) || !near(g.ToS, w.ToS) || g.Messages != w.Messages || g.Failed != w.Failed ||
			g.Missed != w.Missed || !near(g.MedianMs, w.MedianMs) || !near(g.LongestGapS, w.LongestGapS) {
			t.Errorf("phase %d: %+v\nwant %+v", i, g, w)
		}
	}
	if !strings.Contains(phases[1].Change, "handover wifi up") || !strings.Contains(phases[1].Change, "handover wifi down") || phases[0].Change != "" {
		t.Errorf("changes %q, %q: want the handover's two directions as one change at 2 s", phases[0].Change, phases[1].Change)
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
