package experiment

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/results"
)

var frameTransports = []string{"udp", "tcp", "rtp", "mpegts", "quic-streams", "quic-dgram"}

func framesRun(t *testing.T, link, wl string, count int) map[string]results.Summary {
	t.Helper()
	rows, _ := sweep(t, "", frameTransports, link, 0, 0, "", nil, withWorkload("{type: frames, "+wl+"}", count))
	return byProtocol(rows)
}

// TestEveryTransportDeliversEveryFrame: on a clean 10 ms-RTT link every
// frame of every transport gets its result, no round trip beats the RTT,
// and the one-way delay is at least the link's 5 ms and below the round
// trip (quic-go paces a frame's packets over part of an RTT, so its last
// byte arrives a few milliseconds after the link's delay).
func TestEveryTransportDeliversEveryFrame(t *testing.T) {
	requireRoot(t)
	by := framesRun(t, "rtt=10ms", "size: 20KB", 30)
	for _, p := range frameTransports {
		r, ok := by[p]
		if !ok {
			t.Errorf("%s: no row", p)
			continue
		}
		if r.Int("frames") != 30 || r.Float("frames_lost_pct") != 0 {
			t.Errorf("%s: %d frames, %.1f %% lost", p, r.Int("frames"), r.Float("frames_lost_pct"))
		}
		if rtt := r.Float("frame_rtt_p50_ms"); !(rtt >= 10) {
			t.Errorf("%s: round trip p50 %.2f ms beats the 10 ms RTT", p, rtt)
		}
		if owd := r.Float("owd_p50_ms"); !(owd >= 5 && owd < r.Float("frame_rtt_p50_ms")) {
			t.Errorf("%s: one-way delay p50 %.2f ms, want at least 5 ms and below the round trip %.2f ms", p, owd, r.Float("frame_rtt_p50_ms"))
		}
	}
}

// TestLossLosesDatagramFramesOnly: with 5 % loss towards the server, a
// 20 KB frame (14 datagrams) loses a fragment about half the time: udp,
// rtp, mpegts and quic-dgram lose frames; tcp and quic-streams retransmit
// and lose none.
func TestLossLosesDatagramFramesOnly(t *testing.T) {
	requireRoot(t)
	// 40 frames at 60 fps (0.67 s; 1.33 s at the default 30): the loss
	// is per datagram, so the frames lost are as many whatever the rate,
	// and a retransmitting stream stalled behind a lost segment sends
	// the frames queued behind it late, not never (only a frame still
	// unsent when the cell ends is), with the 2 s grace to finish.
	by := framesRun(t, "rtt=10ms,up.loss=5%", "size: 20KB, reassembly_timeout: 300ms, fps: 60", 40)
	for _, p := range frameTransports {
		lost := by[p].Float("frames_lost_pct")
		switch p {
		case "tcp", "quic-streams":
			if lost != 0 {
				t.Errorf("%s retransmits, yet lost %.1f %% of frames", p, lost)
			}
		default:
			// P(a 14-datagram frame is whole) = 0.95^14 = 49 %: over 40
			// frames, fewer than 10 % lost is a 5-sigma event.
			if !(lost > 10) {
				t.Errorf("%s lost %.1f %% of frames at 5 %% datagram loss; want many", p, lost)
			}
			if pl := by[p].Float("packets_lost_pct"); !(pl > 1 && pl < 12) {
				t.Errorf("%s: %.2f %% of datagrams lost, configured 5 %%", p, pl)
			}
		}
	}
}

// TestJitterAndThroughputOnAKnownLink: through a 50 Mbit/s limiter a 20 KB
// frame's 14 datagrams queue behind each other, each one transmission time
// (1514 B at 50 Mbit/s: 0.242 ms) later than the one before, and the next
// frame starts afresh. RFC 3550's estimator then settles, at a frame's end,
// at 1.545 transmission times (0.374 ms); throughput is the frames' bytes
// on the wire, 30 per second. The estimator's final value moves with every
// late packet and a busy host only ever adds lateness, so the test holds
// it to the queueing pattern from below (it must show) and to a sane
// ceiling from above (it measured 0.374 to 0.611 ms here).
func TestJitterAndThroughputOnAKnownLink(t *testing.T) {
	requireRoot(t)
	by := framesRun(t, "rtt=10ms,rate=50Mbit", "size: 20KB", 60)
	r := by["udp"]
	// The upper bounds widen with the host's own noise during the cell (a
	// stall delays the datagrams after it, which the jitter sees; stolen
	// CPU time moves frames across the window's edges): on a quiet host
	// 3 ms and 3 %.
	wakeP99Ms, steal := r.Float("host_wakeup_p99_us")/1000, r.Float("host_steal_pct")
	if math.IsNaN(wakeP99Ms) || math.IsNaN(steal) {
		t.Fatalf("the row lacks the host's noise: wake-up p99 %v ms, steal %v %%", wakeP99Ms, steal)
	}
	maxJitter := 3 + 2*wakeP99Ms
	// From below, the servers' kernel receive stamps see the datagrams as
	// the emulator released them: a datagram released late by e shortens
	// the gap after it by e and lengthens the one before, so each |D| the
	// estimator takes may move by the release error. The floor is the
	// queueing's 0.374 ms less 0.1 ms and twice the cell's measured
	// release error p99 (the read-time stamps before hid this: a reader
	// taking one datagram at a time spread them out again).
	release := r.Float("emu_release_p99_us") / 1000
	if math.IsNaN(release) {
		t.Fatalf("the row lacks the emulator's release error")
	}
	minJitter := 0.374 - 0.1 - 2*release
	if j := r.Float("jitter_rfc3550_ms"); !(j > minJitter && j < maxJitter) {
		t.Errorf("udp jitter %.3f ms, want the queueing's 0.374 ms (above %.3f: less 0.1 ms and twice the release error p99 %.3f ms) and less than %.2f ms (3 ms + twice the host's wake-up p99)", j, minJitter, release, maxJitter)
	}
	// 20000 B in 14 datagrams of 12 B header each, plus 42 B of
	// Ethernet, IP and UDP headers each, 30 times a second.
	want := (20000.0 + 14*(12+42)) * 8 * 30 / 1e6
	// Packet level, every transport alike. A probe on the client taps
	// after its transmit queue (the link's queue), so it sees each
	// packet's transmission time (0.242 ms at most) and the link's 5 ms,
	// the same for every full packet: the emulator times both, so no
	// host noise enters. From arrival, each packet also waits behind the
	// frame's earlier packets (up to 14 transmission times, 3.4 ms).
	for _, p := range frameTransports {
		owd, j, queued := by[p].Float("pkt_owd_mean_ms"), by[p].Float("pkt_jitter_ms"), by[p].Float("pkt_owd_queued_mean_ms")
		if !(owd >= 5 && owd <= 5.25) || !(j >= 0 && j < 0.25) {
			t.Errorf("%s: packet one-way delay %.3f ms, packet jitter %.3f ms; want 5 to 5.25 ms and under a transmission time", p, owd, j)
		}
		if !(queued > owd+0.5 && queued < 9+wakeP99Ms) {
			t.Errorf("%s: packet one-way delay from arrival %.3f ms; want the queue's wait above %.3f ms, under 9 ms", p, queued, owd)
		}
	}
	tol := 0.03 + steal/100
	if tp := r.Float("throughput_mbps"); math.Abs(tp-want)/want > tol {
		t.Errorf("udp throughput %.3f Mbit/s, want %.3f ± %.1f %% (3 %% + the host's stolen share)", tp, want, tol*100)
	}
}

// TestFramesEndOnTimeWhateverTheLinkDoes: frames far larger than a QUIC
// datagram are fragmented and delivered; a receiver slower than the frame
// rate makes frames miss their deadline; an outage that takes the link
// away for good loses the frames after it on every transport, and the
// cell still ends on time, each frame a record that says what happened.
func TestFramesEndOnTimeWhateverTheLinkDoes(t *testing.T) {
	requireRoot(t)
	// 137 datagrams per frame: quic-go paces them, and may drop one from
	// its bounded send queue; most frames arrive, and a lost one says so.
	// How many the queue drops follows the CPU the sender gets (5 of 15
	// frames beside the suite's other timed run, at most 3 alone), so the
	// bound is the name's "most": a frame that could not be fragmented
	// would lose every one.
	bigRows, bigDir := sweep(t, "", []string{"quic-dgram"}, "rtt=10ms", 0, 0, "", nil, withWorkload("{type: frames, size: 150KB}", 15))
	if lost := bigRows[0].Float("frames_lost_pct"); !(lost < 50) {
		t.Errorf("150 KB frames over QUIC datagrams: %.1f %% lost, want most delivered", lost)
	}
	recs := readCSV(t, filepath.Join(bigDir, "records.csv"))
	errCol := slices.Index(recs[0], "error")
	for _, r := range recs[1:] {
		if e := r[errCol]; e != "" && !strings.HasPrefix(e, "lost: ") && !strings.HasPrefix(e, "not sent: ") {
			t.Errorf("a frame's error does not say what happened: %q", e)
		}
	}
	rows, _ := sweep(t, "", []string{"udp"}, "rtt=10ms", 0, 0, "", nil, withWorkload("{type: frames, size: 4KB, processing: 50ms}", 30))
	if miss := rows[0].Float("deadline_miss_pct"); !(miss > 50) {
		t.Errorf("a server taking 50 ms per 33 ms frame: %.1f %% deadline misses, want most", miss)
	}
	start := time.Now()
	// 60 frames at 60 fps: 1 s of frames, the link gone from 600 ms
	// (the frames start about 0.1 s after the link's clock: half of them
	// were lost, 47-53 % in two runs; at 30 fps from 1.5 s, 28 %). The
	// loss's bounds hold while the frames start less than 0.4 s late.
	by := framesRun(t, "{rtt: 10ms, outages: [{at: 600ms, for: 1h}]}", "size: 20KB, fps: 60", 60)
	// Six cells of 1 s of frames and 2 s of grace each (the grace for
	// results outstanding: at least 2 s), 18 s, with set-up ~19.6 s
	// here; the bound leaves the ~19.5 s of slack the 45 s left over the
	// 2 s cells' 25.5 s, so a cell that waited 3.3 s more for the link
	// still fails.
	if took := time.Since(start); took > 39*time.Second {
		t.Errorf("six cells with an outage took %v: something waited for the link", took)
	}
	for _, p := range frameTransports {
		// Frames without a result: lost, or never sent by a stream
		// blocked behind the outage.
		lost := by[p].Float("frames_lost_pct")
		if !(lost > 20 && lost < 80) {
			t.Errorf("%s: %.1f %% of frames lost or unsent with the link gone for the second half", p, lost)
		}
	}
}
