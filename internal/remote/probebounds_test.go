package remote

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestProberBoundsAndFreedSlots: a prober lives 1 to MaxProbeSeconds
// seconds (0 and one past are refused, the bound itself is not); a train
// asks for 2 to MaxTrain packets (one past is refused and sends nothing,
// MaxTrain sends that many, to the controller); and a prober's slot among
// the agent's MaxServers is freed when its report is taken or it is
// stopped, so the next one starts.
func TestProberBoundsAndFreedSlots(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxServers = 2
	_, addr, pairing, _ := testAgent(t, limits)
	c := pairedFrom(t, addr, pairing)
	probe := func(seconds int) (ProbeResult, error) {
		var r ProbeResult
		err := c.Call(OpProbe, ProbeArgs{Port: freePort(t), Seconds: seconds}, &r)
		return r, err
	}
	for _, s := range []int{0, MaxProbeSeconds + 1} {
		if _, err := probe(s); err == nil || !strings.Contains(err.Error(), "want 1 to 600") {
			t.Errorf("a prober for %d s: %v, want refused", s, err)
		}
	}
	a, err := probe(MaxProbeSeconds)
	if err != nil {
		t.Fatalf("a prober for MaxProbeSeconds: %v", err)
	}
	b, err := probe(1)
	if err != nil {
		t.Fatalf("a prober for 1 s: %v", err)
	}
	if _, err := probe(1); err == nil || !strings.Contains(err.Error(), "limit 2") {
		t.Fatalf("a third server: %v, want refused at the limit", err)
	}
	var rep ProbeReport
	if err := c.Call(OpProbeReport, StopArgs{ID: b.ID}, &rep); err != nil {
		t.Fatal(err)
	}
	third, err := probe(60)
	if err != nil {
		t.Fatalf("after a report freed a slot: %v", err)
	}
	if err := c.Call(OpStop, StopArgs{ID: third.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := probe(60); err != nil {
		t.Fatalf("after a stop freed a slot: %v", err)
	}

	// Trains, asked from the controller's address with a prober's
	// cookie: a prober on a port we know, in a's slot.
	if err := c.Call(OpStop, StopArgs{ID: a.ID}, nil); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	var r ProbeResult
	if err := c.Call(OpProbe, ProbeArgs{Port: port, Seconds: 60}, &r); err != nil {
		t.Fatal(err)
	}
	ctl := listen(t, controllerIP)
	agentAt := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	const size = 200
	ask := func(count int) {
		ctl.conn.WriteToUDP(ProbePacket{Kind: probeTrainReq, Cookie: r.Cookie, Seq: uint32(count), TimeNs: size}.Marshal(probeHeader), agentAt)
	}
	ask(MaxTrain + 1)
	ask(1)
	time.Sleep(300 * time.Millisecond)
	if n := ctl.bytes.Load(); n != 0 {
		t.Errorf("trains of %d and 1 packets drew %d bytes, want none", MaxTrain+1, n)
	}
	ask(MaxTrain)
	want := int64(MaxTrain * size)
	for deadline := time.Now().Add(5 * time.Second); ctl.bytes.Load() < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // nothing more comes
	if n := ctl.bytes.Load(); n != want {
		t.Errorf("a train of MaxTrain (%d) packets of %d bytes drew %d bytes, want %d", MaxTrain, size, n, want)
	}
	if err := c.Call(OpProbeReport, StopArgs{ID: r.ID}, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Trains != 1 || rep.Refused != 2 {
		t.Errorf("report: %d trains, %d refused; want 1 and 2", rep.Trains, rep.Refused)
	}
}

// TestFillCountsItsHeaderBytes: a fill paces whole frames, its payload and
// the 42 bytes of UDP, IP and Ethernet headers. 100-byte packets for
// 100 ms are 142·8 = 1136 bits each, so 11000 bit/s owes 1100 bits, not
// one packet: refused, naming 1136/0.1 = 11360 bit/s as the least (without
// the headers, 800 bits a packet, it would be one packet and go on to the
// next check). 11360 bit/s is one packet: past this check, to the next
// (no probe has come from the controller yet). Independent of timing.
func TestFillCountsItsHeaderBytes(t *testing.T) {
	_, addr, pairing, _ := testAgent(t, DefaultLimits())
	c := pairedFrom(t, addr, pairing)
	var probe ProbeResult
	if err := c.Call(OpProbe, ProbeArgs{Port: freePort(t), Seconds: 60}, &probe); err != nil {
		t.Fatal(err)
	}
	fill := func(rate float64) error {
		return c.Call(OpProbeFill, FillArgs{ID: probe.ID, RateBps: rate, Millis: 100, Size: 100}, nil)
	}
	if err := fill(11000); err == nil || !strings.Contains(err.Error(), "want at least 11360 bit/s") {
		t.Errorf("11000 bit/s of 100-byte packets for 100 ms: %v; want refused as under one packet (11360 bit/s)", err)
	}
	if err := fill(11360); err == nil || !strings.Contains(err.Error(), "no probe from the controller") {
		t.Errorf("11360 bit/s: %v; want one packet, refused only for want of the controller's probe", err)
	}
}
