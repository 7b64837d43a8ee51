package experiment

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRTPAndMPEGTSAreStandard captures the rtp and mpegts transports and
// has an independent decoder, tshark's RTP, RTCP and MPEG-TS dissectors,
// read them: no malformed packet, no expert error; RTP sequence numbers
// step by one, timestamps by 3000 (90 kHz at 30 Hz) from frame to frame
// and not within one, the marker bit on each frame's last packet; MPEG-TS
// with no continuity-counter gap and a PCR per frame.
func TestRTPAndMPEGTSAreStandard(t *testing.T) {
	requireRoot(t)
	// 1.5 s of frames: RTCP sender reports go out every second.
	const frames = 45
	if _, err := exec.LookPath("tshark"); err != nil {
		missingClient(t, "tshark")
	}
	_, dir := sweep(t, "", []string{"rtp", "mpegts"}, "rtt=10ms", 0, 0, "capture: true\n", nil, withWorkload("{type: frames, size: 20KB}", frames))
	pcap := func(proto string) string {
		m, _ := filepath.Glob(filepath.Join(dir, "cells", "*_"+proto+"_*", "captures", "client-eth0.pcap"))
		if len(m) != 1 {
			t.Fatalf("%s: capture %v", proto, m)
		}
		return m[0]
	}
	tshark := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command("tshark", args...).Output()
		if err != nil {
			t.Fatalf("tshark %v: %v", args, err)
		}
		s := strings.TrimSpace(string(out))
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	bad := "udp.dstport==4433 && (_ws.malformed || _ws.expert.severity >= error)"

	rtp := pcap("rtp")
	decode := []string{"-r", rtp, "-d", "udp.port==4433,rtp", "-d", "udp.port==4434,rtcp"}
	if lines := tshark(append(decode, "-Y", bad)...); len(lines) > 0 {
		t.Errorf("tshark finds malformed RTP:\n%s", strings.Join(lines, "\n"))
	}
	rows := tshark(append(decode, "-Y", "udp.dstport==4433 && rtp", "-T", "fields", "-e", "rtp.seq", "-e", "rtp.timestamp", "-e", "rtp.marker", "-e", "rtp.p_type")...)
	if len(rows) < frames*14 {
		t.Fatalf("tshark decoded %d RTP packets, want %d frames of 14", len(rows), frames)
	}
	prevSeq, prevTS, prevMarker := -1, int64(-1), true
	markers := 0
	for _, r := range rows {
		f := strings.Split(r, "\t")
		seq, _ := strconv.Atoi(f[0])
		ts, _ := strconv.ParseInt(f[1], 10, 64)
		marker := f[2] == "1" || f[2] == "True"
		if f[3] != "96" {
			t.Fatalf("payload type %s, want 96", f[3])
		}
		if prevSeq >= 0 && seq != (prevSeq+1)%65536 {
			t.Errorf("sequence %d after %d", seq, prevSeq)
		}
		if prevTS >= 0 {
			step := (ts - prevTS + 1<<32) % (1 << 32)
			if prevMarker && step != 3000 || !prevMarker && step != 0 {
				t.Errorf("timestamp step %d after a packet with marker %v", step, prevMarker)
			}
		}
		if marker {
			markers++
		}
		prevSeq, prevTS, prevMarker = seq, ts, marker
	}
	if markers != frames {
		t.Errorf("%d marker bits, want one per frame (%d)", markers, frames)
	}
	if rtcp := tshark(append(decode, "-Y", "rtcp.pt == 200 || rtcp.pt == 201", "-T", "fields", "-e", "rtcp.pt")...); len(rtcp) == 0 {
		t.Error("no RTCP sender or receiver report")
	}

	ts := pcap("mpegts")
	decode = []string{"-r", ts, "-d", "udp.port==4433,mp2t"}
	if lines := tshark(append(decode, "-Y", bad+" || mp2t.cc.drop")...); len(lines) > 0 {
		t.Errorf("tshark finds malformed MPEG-TS or continuity gaps:\n%s", strings.Join(lines, "\n"))
	}
	if pcr := tshark(append(decode, "-Y", "udp.dstport==4433 && mp2t.af.pcr", "-T", "fields", "-e", "mp2t.af.pcr")...); len(pcr) != frames {
		t.Errorf("%d PCRs, want one per frame (%d)", len(pcr), frames)
	}
	if sizes := tshark(append(decode, "-Y", "udp.dstport==4433 && mp2t", "-T", "fields", "-e", "udp.length")...); len(sizes) == 0 {
		t.Error("tshark decoded no MPEG-TS datagram")
	} else {
		for _, s := range sizes {
			n, _ := strconv.Atoi(s)
			if (n-8)%188 != 0 || n-8 > 7*188 {
				t.Errorf("a datagram of %d B is not whole 188-byte TS packets, 7 at most", n-8)
				break
			}
		}
	}
}
