package workload

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"tlab/internal/proto"
)

// TestFramesAccounting gives the frames workload's accounting a made-up
// cell, without a network: a warm-up frame, a frame whose two packets and
// result arrive, one that loses a packet and is never reassembled, one
// sent 10 ms late whose result misses its deadline and one of whose
// packets arrives twice, and one that could not be sent. Expected values
// are worked out by hand from the definitions (RFC 3550's jitter
// estimator, the type-7 quantile), not from the code.
func TestFramesAccounting(t *testing.T) {
	f := Frames{Size: 3000, FPS: 10, ResultSize: 100} // one frame every 100 ms
	t0 := time.Unix(1000, 0)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	led := &frameLedger{sent: map[uint64]time.Time{}, frameOf: map[uint64]uint32{}, server: map[uint32]proto.FrameArrival{}}
	send := func(hash uint64, frame uint32, sentMs float64) { led.sent[hash], led.frameOf[hash] = at(sentMs), frame }
	arrive := func(hash uint64, atMs float64) {
		led.arrivals = append(led.arrivals, proto.Packet{Hash: hash, At: at(atMs)})
	}
	send(100, 0, 0)
	send(11, 1, 100)
	send(12, 1, 100)
	send(21, 2, 200)
	send(22, 2, 200)
	send(31, 3, 310)
	arrive(100, 5)  // warm-up: 5 ms
	arrive(11, 110) // 10 ms
	arrive(12, 114) // 14 ms
	arrive(21, 220) // 20 ms; 22 never arrives
	arrive(31, 322) // 12 ms
	arrive(31, 330) // a duplicate: counted once
	led.server[1] = proto.FrameArrival{ID: 1, Complete: true, Bytes: 3000}
	led.server[2] = proto.FrameArrival{ID: 2, Complete: false, Bytes: 1500}
	led.server[3] = proto.FrameArrival{ID: 3, Complete: true, Bytes: 3000}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	sent := []sentFrame{
		{scheduled: 0, sent: 0, packets: 1},
		{scheduled: ms(100), sent: ms(100), packets: 2},
		{scheduled: ms(200), sent: ms(200), packets: 2},
		{scheduled: ms(300), sent: ms(310), packets: 1},
		{scheduled: ms(400), sent: ms(400), err: errors.New("use of closed connection")},
	}
	results := map[uint32]time.Duration{0: ms(20), 1: ms(130), 3: ms(450)}
	records, notes := f.account(led, sent, results, 1)

	if len(records) != 5 {
		t.Fatalf("%d records, want 5", len(records))
	}
	if !records[0].Warmup || records[1].Warmup {
		t.Errorf("warm-up flags: %v %v", records[0].Warmup, records[1].Warmup)
	}
	r1 := records[1]
	if r1.Error != "" || r1.DelayMs != 30 || r1.Extra["owd_ms"] != 14 || r1.Extra["packets_arrived"] != 2 || r1.Extra["deadline_miss"] != 0 || r1.RespBytes != 100 {
		t.Errorf("frame 1: %+v", r1)
	}
	if r2 := records[2]; !strings.Contains(r2.Error, "1500 of 3000 bytes") || r2.Extra["packets_arrived"] != 1 {
		t.Errorf("frame 2: %+v", r2)
	}
	r3 := records[3]
	if r3.LatenessMs != 10 || r3.DelayMs != 140 || r3.Extra["deadline_miss"] != 1 || r3.Extra["packets_arrived"] != 1 {
		t.Errorf("frame 3 (late, a duplicate packet, result after its deadline): %+v", r3)
	}
	if r4 := records[4]; !r4.Unsent || !strings.HasPrefix(r4.Error, "not sent") {
		t.Errorf("frame 4: %+v", r4)
	}
	// Measured one-way delays in arrival order: 10, 14, 20, 12 ms.
	// RFC 3550: J += (|D| - J)/16 for D = 4, 6, 8.
	j := 0.0
	for _, d := range []float64{4, 6, 8} {
		j += (d - j) / 16
	}
	want := map[string]float64{
		"owd_p50_ms":        13,    // type 7: between 12 and 14
		"owd_p99_ms":        19.82, // 14 + 0.97 × (20 − 14)
		"jitter_rfc3550_ms": j,     // 1.0713
		"packets_lost_pct":  20,    // 1 of 5 measured packets
		"window_s":          0.4,   // 4 measured frames of 100 ms
	}
	for k, v := range want {
		if got := notes[k]; !(math.Abs(got-v) <= 1e-9) {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
}

// TestFramesRunOverAMemoryTransport: the whole workload (schedule, sender,
// results, accounting) over an in-memory transport that drops every
// fourth frame before the server: 12 frames, 2 of warm-up, each answered
// but the dropped ones, whose records say no packet reached the server.
func TestFramesRunOverAMemoryTransport(t *testing.T) {
	m := &memFrames{dropEvery: 4}
	env, rec := newEnv(t, "mem", m, fakeHosts{})
	f := Frames{FPS: 200, Size: 1000, ResultSize: 10, Count: 10, Warmup: 10 * time.Millisecond, Reassembly: 10 * time.Millisecond}
	if err := f.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if len(rec.records) != 12 || rec.windows != 1 {
		t.Fatalf("%d records, %d windows", len(rec.records), rec.windows)
	}
	for i, r := range rec.records {
		dropped := (i+1)%4 == 0
		switch {
		case r.Seq != i || r.Warmup != (i < 2):
			t.Errorf("record %d: seq %d warm-up %v", i, r.Seq, r.Warmup)
		case dropped && r.Error != "lost: no packet of the frame reached the server":
			t.Errorf("frame %d was dropped, record says %q", i, r.Error)
		case !dropped && (r.Error != "" || r.RespBytes != 10 || r.Extra["packets_arrived"] != 1):
			t.Errorf("frame %d: %+v", i, r)
		}
	}
	// Frames 4 and 8 of the measured 3..12 (seq 3, 7, 11 dropped; seq 3
	// is measured): 3 of 10 measured packets lost.
	if got := rec.notes["packets_lost_pct"]; got != 30 {
		t.Errorf("packets_lost_pct %v, want 30", got)
	}
	if got := rec.notes["window_s"]; got != 0.05 {
		t.Errorf("window_s %v, want 0.05 (10 frames at 200 Hz)", got)
	}
}
