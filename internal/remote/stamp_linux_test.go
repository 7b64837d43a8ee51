package remote

import (
	"net"
	"testing"
	"time"
)

// TestStampedReadsTellArrivalNotReading: a packet read long after it
// arrived carries its arrival time. The read comes 200 ms after the send;
// a stamp taken at the read (what the prober did before) would be within
// a few milliseconds of it.
func TestStampedReadsTellArrivalNotReading(t *testing.T) {
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := Stamp(c)
	if err != nil {
		t.Fatal(err)
	}
	out, err := net.DialUDP("udp", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	before := time.Now().UnixNano()
	if _, err := out.Write([]byte("probe")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	buf := make([]byte, 64)
	n, from, stamp, err := sc.ReadStamped(buf)
	read := time.Now().UnixNano()
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "probe" || from.Port != out.LocalAddr().(*net.UDPAddr).Port {
		t.Errorf("read %q from %v", buf[:n], from)
	}
	if stamp < before || read-stamp < int64(100*time.Millisecond) {
		t.Errorf("stamp %.1f ms after the send and %.1f ms before the read: want the arrival (the read was 200 ms later)",
			float64(stamp-before)/1e6, float64(read-stamp)/1e6)
	}
}

// TestEchoCarriesTheAgentsSendTime: an echo of 41 bytes or more carries
// the agent's send time beside its arrival time, and reads back with
// both; a shorter one carries only the arrival (the send time reads 0).
func TestEchoCarriesTheAgentsSendTime(t *testing.T) {
	p := ProbePacket{Kind: probeEcho, Cookie: 0xfeedface01020304, Seq: 9, TimeNs: 100, AgentNs: 2000, AgentSentNs: 2500}
	got, err := ParseProbe(p.Marshal(200))
	if err != nil || got != p {
		t.Errorf("200 bytes: %+v, %v; want %+v", got, err, p)
	}
	got, err = ParseProbe(p.Marshal(probeHeader))
	if want := (ProbePacket{Kind: probeEcho, Cookie: 0xfeedface01020304, Seq: 9, TimeNs: 100, AgentNs: 2000}); err != nil || got != want {
		t.Errorf("%d bytes: %+v, %v; want %+v", probeHeader, got, err, want)
	}
}

// TestECNTravelsBothWays: a datagram sent with WriteECN's ECT(0) reads
// back with ECN 2, one sent plainly with 0: the field a loaded recording
// counts CE marks in.
func TestECNTravelsBothWays(t *testing.T) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	in, err := Stamp(rx)
	if err != nil {
		t.Fatal(err)
	}
	txc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer txc.Close()
	tx, err := Stamp(txc)
	if err != nil {
		t.Fatal(err)
	}
	to := rx.LocalAddr().(*net.UDPAddr)
	buf := make([]byte, 64)
	for _, want := range []byte{2, 1, 0} {
		if want == 0 {
			_, err = txc.WriteToUDP([]byte("plain"), to)
		} else {
			err = tx.WriteECN([]byte("marked"), to, want)
		}
		if err != nil {
			t.Fatal(err)
		}
		rx.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _, _, ecn, err := in.ReadStampedECN(buf)
		if err != nil || ecn != want {
			t.Errorf("sent with ECN %d, read %d (%v)", want, ecn, err)
		}
	}
}
