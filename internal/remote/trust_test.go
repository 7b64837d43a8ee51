package remote

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"tlab/internal/cross"
	"tlab/internal/proto"
	"tlab/internal/racedetect"
	"tlab/internal/units"
)

// The agent's load is one budget (issue 48, finding 5): --max-load bounds
// what every fill and every bulk down flow send the controller together,
// and no rate a controller names escapes it.

// startProbers starts n path probers for the paired controller c, each
// told where the controller is by one cookie'd echo from ctl.
func startProbers(t *testing.T, c *Client, ctl *listener, n int) []ProbeResult {
	t.Helper()
	probes := make([]ProbeResult, n)
	for i := range probes {
		port := freePort(t)
		if err := c.Call(OpProbe, ProbeArgs{Port: port, Seconds: 60}, &probes[i]); err != nil {
			t.Fatalf("prober %d: %v", i, err)
		}
		ctl.conn.WriteToUDP(ProbePacket{Kind: probeEcho, Cookie: probes[i].Cookie, Seq: 0}.Marshal(probeHeader),
			&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	}
	// The echoes come back: each prober has heard the controller.
	deadline := time.Now().Add(5 * time.Second)
	for ctl.bytes.Load() < int64(n*probeHeader) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := ctl.bytes.Load(); got < int64(n*probeHeader) {
		t.Fatalf("%d bytes of echoes from %d probers, want %d", got, n, n*probeHeader)
	}
	return probes
}

// TestAbsurdFillRatesAreRefused: a fill of 1e-9 bit/s (whose gap between
// packets, 8336 bits / 1e-9 bit/s in ns, is far beyond what a Duration
// holds) or of any rate below MinLoadBps is refused with a reason, and the
// controller receives nothing but the echoes.
func TestAbsurdFillRatesAreRefused(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxLoadMbps, limits.MaxLoadS = 20, 1
	_, addr, pairing, _ := testAgent(t, limits)
	c := pairedFrom(t, addr, pairing)
	ctl := listen(t, controllerIP)
	probe := startProbers(t, c, ctl, 1)[0]
	echoes := ctl.bytes.Load()
	// Packets of the smallest size (75 bytes, 600 bits, on the wire):
	// half the floor for 1 s would still be 8 of them, so only the floor
	// refuses it.
	for _, rate := range []float64{1e-9, 1e-300, 5e-324, 1, MinLoadBps / 2} {
		err := c.Call(OpProbeFill, FillArgs{ID: probe.ID, RateBps: rate, Millis: 1000, Size: probeHeader}, nil)
		if err == nil || !strings.Contains(err.Error(), "at least") {
			t.Errorf("a fill of %g bit/s: %v, want it refused for its rate", rate, err)
		}
	}
	// A rate above the floor for too short a time to make one packet
	// (10 kbit/s for 1 ms is 10 bits, a packet of 1000 bytes 8336).
	if err := c.Call(OpProbeFill, FillArgs{ID: probe.ID, RateBps: MinLoadBps, Millis: 1, Size: 1000}, nil); err == nil || !strings.Contains(err.Error(), "not one packet") {
		t.Errorf("a fill of no whole packet: %v, want it refused", err)
	}
	time.Sleep(1200 * time.Millisecond)
	if got := ctl.bytes.Load() - echoes; got != 0 {
		t.Errorf("the controller received %d bytes of fills that were all refused (20 Mbit/s for 1 s would be 2.5 MB)", got)
	}
	// The floor itself is a rate a fill may have: 1000-byte packets at
	// MinLoadBps for 1 s make at least one packet.
	if err := c.Call(OpProbeFill, FillArgs{ID: probe.ID, RateBps: MinLoadBps, Millis: 1000, Size: 1000}, nil); err != nil {
		t.Errorf("a fill at the floor, %g bit/s: %v", float64(MinLoadBps), err)
	}
}

// TestEightFillsShareTheCap: eight probers (the agent's --max-servers)
// each asked for a fill at the whole --max-load send, together, no more
// than --max-load: 20 Mbit/s for 1 s is 2.5 MB in all, not eight times
// that. The bytes are counted as the controller's socket reads them
// (payload), for 1.5 s from the first request: the fills last 1 s.
func TestEightFillsShareTheCap(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxLoadMbps, limits.MaxLoadS = 20, 1
	_, addr, pairing, _ := testAgent(t, limits)
	c := pairedFrom(t, addr, pairing)
	ctl := listen(t, controllerIP)
	probes := startProbers(t, c, ctl, limits.MaxServers)
	before := ctl.bytes.Load()
	start := time.Now()
	for _, p := range probes {
		if err := c.Call(OpProbeFill, FillArgs{ID: p.ID, RateBps: 20e6, Millis: 1000, Size: 1000}, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500*time.Millisecond - time.Since(start))
	got := ctl.bytes.Load() - before
	// The cap: 20e6 bit/s x 1.5 s / 8 = 3.75 MB at the very most in the
	// window; the fills end at 1 s, so 2.5 MB is what the cap lets
	// through, and 15 % over it is the test's slack for timers.
	capBytes := int64(20e6 / 8 * 1.0)
	t.Logf("eight fills at the cap sent %d bytes in %v (cap %d)", got, time.Since(start), capBytes)
	if got > capBytes*115/100 {
		t.Errorf("eight fills at --max-load 20Mbit sent %d bytes in 1.5 s: %.1f times the cap's %d", got, float64(got)/float64(capBytes), capBytes)
	}
	// And they did send: the shared cap is not a stop. From below a
	// timing claim (the pacer's timers, late, send fewer: 446 kB under
	// the race detector beside the timed tests), widened by the
	// detector's slowdown as the suite's other time bounds are.
	if got < capBytes/2/int64(racedetect.Slowdown()) {
		t.Errorf("eight fills sent %d bytes, want about the cap's %d", got, capBytes)
	}
}

// TestFillsAndDownFlowsShareTheCap: two bulk servers' down flows (two
// servers, each of which paced alone at --max-load) and a prober's fill,
// all running at once, send the controller together no more than
// --max-load: 20 Mbit/s over the window they ran is the cap, 15 % over it
// the slack for timers. Before one line was shared it was three times.
func TestFillsAndDownFlowsShareTheCap(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxLoadMbps, limits.MaxLoadS = 20, 2
	_, addr, pairing, _ := testAgent(t, limits)
	c := pairedFrom(t, addr, pairing)
	ctl := listen(t, controllerIP)
	probe := startProbers(t, c, ctl, 1)[0]
	certs, certPEM, keyPEM := serverCert(t)
	settingsJSON, _ := json.Marshal(proto.DefaultSettings())
	s := proto.DefaultSettings()
	s.Certs = certs
	zero := units.Duration(0)

	before := ctl.bytes.Load()
	start := time.Now()
	var runs []*cross.Run
	for range 2 {
		far := &agentFar{c: c, port: freePort(t), settings: settingsJSON, certPEM: certPEM, keyPEM: keyPEM}
		r, err := cross.Start(context.Background(), cross.Endpoints{Client: boundNet{controllerIP}, ServerAddr: net.IPv4(127, 0, 0, 1), Far: far},
			cross.Config{Flows: 1, Direction: cross.Down, Protocol: "tcp", Lead: &zero}, s, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	if err := c.Call(OpProbeFill, FillArgs{ID: probe.ID, RateBps: 20e6, Millis: 2000, Size: 1000}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	var down int64
	for _, r := range runs {
		flows, err := r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range flows {
			down += f.Bytes
		}
	}
	window := time.Since(start)
	fill := ctl.bytes.Load() - before
	capBytes := int64(20e6 / 8 * window.Seconds())
	t.Logf("in %v: down flows %d B, fill %d B; the cap %d B", window, down, fill, capBytes)
	if down+fill > capBytes*115/100 {
		t.Errorf("two bulk servers and a fill sent %d bytes in %v: %.1f times --max-load's %d", down+fill, window, float64(down+fill)/float64(capBytes), capBytes)
	}
	if down == 0 || fill == 0 {
		t.Errorf("down flows %d B, fill %d B: both should have sent within the cap", down, fill)
	}
}

// TestFrameServerAnswersOnlyTheControllersPort: the udp frame server's
// socket filter admits the controller's address, any port; a 12-byte
// frame from the controller's address but another port (as a forger
// sends it, or another program of the controller's machine) asking for a
// 1400-byte result gets nothing back (issue 48, finding 6: 116 times
// what it sent). The controller's own stream, which spoke first, is
// answered before and after.
func TestFrameServerAnswersOnlyTheControllersPort(t *testing.T) {
	_, addr, pairing, _ := testAgent(t, DefaultLimits())
	c := pairedFrom(t, addr, pairing)
	port := freePort(t)
	if _, err := c.Serve(ServeArgs{Kind: KindFrames, Protocol: "udp", Port: port, Frames: &FrameServeArgs{FPS: 30, ReassemblyMs: 200, ResultSize: proto.MaxResultSize}}); err != nil {
		t.Fatal(err)
	}
	server := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
	stream := listen(t, controllerIP)
	other := listen(t, controllerIP)
	waitFor := func(l *listener, n int64) bool {
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if l.bytes.Load() >= n {
				return true
			}
		}
		return false
	}
	stream.conn.WriteToUDP(wholeFrame(1, 0), server)
	if !waitFor(stream, int64(proto.MaxResultSize)) {
		t.Fatalf("the controller's stream got %d bytes for its first frame, want its %d-byte result", stream.bytes.Load(), proto.MaxResultSize)
	}
	sent := 0
	for i := range 10 {
		b := wholeFrame(uint32(100+i), 0)
		other.conn.WriteToUDP(b, server)
		sent += len(b)
	}
	stream.conn.WriteToUDP(wholeFrame(2, 0), server)
	if !waitFor(stream, 2*int64(proto.MaxResultSize)) {
		t.Errorf("the controller's stream got %d bytes after another port's frames, want two results", stream.bytes.Load())
	}
	time.Sleep(300 * time.Millisecond)
	if n := other.bytes.Load(); n != 0 {
		t.Errorf("another port of the controller's address got %d bytes for %d bytes of frames (%.0f times)", n, sent, float64(n)/float64(sent))
	}
}

// A stranger's connections cannot lock a paired controller out (issue 48,
// finding 7): 8 addresses x 8 connections that sent a ClientHello's first
// byte and then nothing held every pending place, and the legitimate
// controller was refused.

// holdPlaces opens connections from ip that each send the first byte of
// a TLS record (a handshake, 0x16) and then nothing, in rounds of up to
// 40, until want of them are held open by the agent or tries run out (the
// agent's random early drop refuses most near the limit: an attacker
// tries again); it returns those held and closes the rest.
func holdPlaces(t *testing.T, addr string, ip net.IP, want, tries int) []net.Conn {
	t.Helper()
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
	for try := 0; len(held) < want && try < tries; {
		var batch []net.Conn
		for ; len(batch) < 40 && try < tries; try++ {
			c, err := d.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("from %v: %v", ip, err)
			}
			c.Write([]byte{0x16})
			batch = append(batch, c)
		}
		// A refused connection is closed at once: its EOF is here well
		// within 50 ms; a held one reads nothing.
		time.Sleep(50 * time.Millisecond)
		for _, c := range batch {
			c.SetReadDeadline(time.Now().Add(time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); isTimeout(err) && len(held) < want {
				c.SetReadDeadline(time.Time{})
				held = append(held, c)
			} else {
				c.Close()
			}
		}
		// What was closed beyond want gives its place back.
		time.Sleep(20 * time.Millisecond)
	}
	return held
}

// TestPairedControllerGetsPastHeldPlaces: with every pending place held
// by half-open handshakes from eight other networks (127.1.0.1 to
// 127.8.0.1, 8 each: MaxPending 64), a stranger from a ninth is refused,
// and the controller that paired before, from its address, gets in.
func TestPairedControllerGetsPastHeldPlaces(t *testing.T) {
	a, addr, pairing, _ := testAgent(t, DefaultLimits())
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, DialOptions{StateDir: state, Pairing: &pairing, Dialer: ownerDialer()})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The same controller from another address of its own: it paired
	// before, so that address is kept a place too.
	elsewhere := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 2, 2)}}
	if c, err = Dial(ctx, addr, DialOptions{StateDir: state, Dialer: elsewhere}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	a.pendingMu.Lock()
	known := []bool{a.known[netip.MustParseAddr("127.0.0.2")], a.known[netip.MustParseAddr("127.0.2.2")]}
	a.pendingMu.Unlock()
	if !known[0] || !known[1] {
		t.Errorf("the agent keeps places for the pairing's address %v and the paired controller's other one %v, want both", known[0], known[1])
	}

	l := DefaultLimits()
	held := 0
	for n := byte(1); n <= 8; n++ {
		held += len(holdPlaces(t, addr, net.IPv4(127, n, 0, 1), l.MaxPendingPerIP, 400))
	}
	// The agent counts a place once its accept loop has taken the
	// connection, which may come a moment after the stranger's connect
	// returned (63 of 64 once, under the race detector): wait a little.
	var pending int
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a.pendingMu.Lock()
		pending = a.pending
		a.pendingMu.Unlock()
		if pending >= l.MaxPending || time.Now().After(deadline) {
			break
		}
	}
	if held != l.MaxPending || pending != l.MaxPending {
		t.Fatalf("the strangers hold %d places (the agent counts %d), want all %d", held, pending, l.MaxPending)
	}
	if n := len(holdPlaces(t, addr, net.IPv4(127, 9, 0, 1), 1, 40)); n != 0 {
		t.Errorf("a stranger from a ninth network got a place beyond the %d", l.MaxPending)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err = Dial(ctx, addr, DialOptions{StateDir: state, Dialer: ownerDialer()})
	if err != nil {
		t.Fatalf("the paired controller, with every place held by strangers: %v", err)
	}
	if _, err := c.MeasureClock(3, 0); err != nil {
		t.Errorf("the paired controller's session: %v", err)
	}
	c.Close()
}

// TestSilentConnectionsAreClosedSoon: a connection that sends nothing is
// closed helloWait after it was accepted, not at the end of the whole
// unpaired life (10 s); one whose first byte is not a TLS handshake
// record's (0x16) is closed at once.
func TestSilentConnectionsAreClosedSoon(t *testing.T) {
	_, addr, _, _ := testAgent(t, DefaultLimits())
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	start := time.Now()
	silent.SetReadDeadline(start.Add(unpairedLife + 2*time.Second))
	_, err = silent.Read(make([]byte, 1))
	took := time.Since(start)
	if isTimeout(err) || took > helloWait+time.Second || took < helloWait-500*time.Millisecond {
		t.Errorf("a silent connection was closed after %v (%v), want %v", took, err, helloWait)
	}
	garbage, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer garbage.Close()
	garbage.Write([]byte("G")) // an HTTP request's first byte, and then nothing
	start = time.Now()
	garbage.SetReadDeadline(start.Add(unpairedLife + 2*time.Second))
	garbage.Read(make([]byte, 1))
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("a connection that began with a byte no TLS record begins with was closed after %v, want at once", took)
	}
}

// TestPendingPlacesAreCountedPerNetwork: nine addresses of one /24
// (127.0.0.3 to 127.0.0.11), one half-open handshake each, are one
// network: MaxPendingPerIP (8) of them are held, the ninth refused.
func TestPendingPlacesAreCountedPerNetwork(t *testing.T) {
	_, addr, _, _ := testAgent(t, DefaultLimits())
	held := 0
	for host := byte(3); host <= 11; host++ {
		held += len(holdPlaces(t, addr, net.IPv4(127, 0, 0, host), 1, 1))
	}
	if want := DefaultLimits().MaxPendingPerIP; held != want {
		t.Errorf("nine addresses of one /24 hold %d places, want %d", held, want)
	}
}

// TestNetworksAreSlash24AndSlash64: the networks places are counted by.
func TestNetworksAreSlash24AndSlash64(t *testing.T) {
	for _, c := range []struct{ a, b string }{
		{"192.0.2.1", "192.0.2.254"},
		{"192.0.2.1", "::ffff:192.0.2.77"}, // as a dual-stack socket reads it
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"},
	} {
		if a, b := networkOf(netip.MustParseAddr(c.a)), networkOf(netip.MustParseAddr(c.b)); a != b {
			t.Errorf("%s is in %v, %s in %v: want one network", c.a, a, c.b, b)
		}
	}
	for _, c := range []struct{ a, b string }{
		{"192.0.2.1", "192.0.3.1"},
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
	} {
		if a, b := networkOf(netip.MustParseAddr(c.a)), networkOf(netip.MustParseAddr(c.b)); a == b {
			t.Errorf("%s and %s are both in %v: want two networks", c.a, c.b, a)
		}
	}
}

// admissionAgent is an agent of MaxPending 64, 64 a network (so that
// only the total and the early drop decide), its random draw fixed.
func admissionAgent(t *testing.T, draw float64) *Agent {
	t.Helper()
	id, err := NewIdentity("test agent")
	if err != nil {
		t.Fatal(err)
	}
	l := DefaultLimits()
	l.MaxPending, l.MaxPendingPerIP = 64, 64
	a, err := NewAgent(id, t.TempDir(), "", l, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.earlyDrop = func() float64 { return draw }
	return a
}

// TestEarlyDropRisesToTheLimit: sshd's MaxStartups 32:30:64. Below 32
// pending, no connection is dropped whatever the draw; at 32 one is
// dropped with probability 0.3; at 48 (half way to 64) with 0.3 + 0.7 x
// 16/32 = 0.65: a draw of 0.64 is dropped, 0.66 admitted; at 64 every one
// is refused. An address that paired before is admitted at 64 all the
// same, keptPlaces times.
func TestEarlyDropRisesToTheLimit(t *testing.T) {
	ip := netip.MustParseAddr("192.0.2.1")
	fill := func(a *Agent, n int) {
		a.pendingMu.Lock()
		a.pending = n
		a.pendingMu.Unlock()
	}
	for _, c := range []struct {
		pending int
		draw    float64
		admit   bool
	}{
		{31, 0, true}, {32, 0.29, false}, {32, 0.31, true},
		{48, 0.64, false}, {48, 0.66, true}, {63, 0.99, true}, {64, 0.9999, false},
	} {
		a := admissionAgent(t, c.draw)
		fill(a, c.pending)
		_, err := a.admit(ip)
		if (err == nil) != c.admit {
			t.Errorf("with %d pending and a draw of %g: %v, want admitted %v", c.pending, c.draw, err, c.admit)
		}
	}
	a := admissionAgent(t, 0.5)
	fill(a, 64)
	a.remember(netip.MustParseAddr("::ffff:192.0.2.9"))
	var places []place
	for range keptPlaces {
		p, err := a.admit(netip.MustParseAddr("192.0.2.9"))
		if err != nil {
			t.Fatalf("an address that paired before, with every place taken: %v", err)
		}
		places = append(places, p)
	}
	if _, err := a.admit(netip.MustParseAddr("192.0.2.9")); err == nil {
		t.Errorf("an address that paired before got more than its %d kept places", keptPlaces)
	}
	for _, p := range places {
		a.release(p)
	}
	if a.kept != 0 || a.pending != 64 {
		t.Errorf("after releasing the kept places: %d kept, %d pending; want 0 and 64", a.kept, a.pending)
	}
}

// TestPairedAddressesOutliveTheAgent: the address a controller paired
// from, as its line in the controllers file says, has kept places in the
// next agent on that directory; a note that names none is skipped.
func TestPairedAddressesOutliveTheAgent(t *testing.T) {
	dir := t.TempDir()
	l, err := loadPeerList(dir + "/controllers")
	if err != nil {
		t.Fatal(err)
	}
	fp := strings.Repeat("ab", 32)
	if err := l.put(fp, "paired 2026-01-01T00:00:00Z from 198.51.100.7:40000"); err != nil {
		t.Fatal(err)
	}
	if err := l.put(strings.Repeat("cd", 32), "paired long ago"); err != nil {
		t.Fatal(err)
	}
	if err := l.put(strings.Repeat("ef", 32), "paired 2026-01-01T00:00:00Z from [2001:db8::5]:40000"); err != nil {
		t.Fatal(err)
	}
	id, _ := NewIdentity("test agent")
	limits := DefaultLimits()
	a, err := NewAgent(id, dir, "", limits, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"198.51.100.7", "2001:db8::5"} {
		if !a.known[netip.MustParseAddr(ip)] {
			t.Errorf("%s paired before, but the agent does not keep it a place (known %v)", ip, a.known)
		}
	}
	if len(a.known) != 2 {
		t.Errorf("known addresses %v, want the two that notes name", a.known)
	}
}

// TestFillsEndAtTheirTime: two fills that share a line of 1 Mbit/s, each
// asking for all of it for 500 ms, get half of it each and still end at
// 500 ms: together 1e6 / 8 x 0.5 = 62.5 kB (15 % slack), not the 125 kB
// each asked for, sent over a second.
func TestFillsEndAtTheirTime(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxLoadMbps, limits.MaxLoadS = 1, 1
	_, addr, pairing, _ := testAgent(t, limits)
	c := pairedFrom(t, addr, pairing)
	ctl := listen(t, controllerIP)
	probes := startProbers(t, c, ctl, 2)
	before := ctl.bytes.Load()
	for _, p := range probes {
		if err := c.Call(OpProbeFill, FillArgs{ID: p.ID, RateBps: 1e6, Millis: 500, Size: 1000}, nil); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	got := ctl.bytes.Load() - before
	t.Logf("two fills of 500 ms on a 1 Mbit/s line sent %d bytes", got)
	// The line's 1 Mbit/s is shared, so the two fills together send at
	// most 62 500 B in their 500 ms (15 % for the timers' slack): more
	// would be a fill that outlives its time or a line per fill. From
	// below only that each fill sent (two 1000-byte datagrams): a sender
	// starved of the CPU sends less in its window, and the suite runs this
	// package at idle priority beside two timed runs (24 000 B seen).
	if want := int64(1e6 / 8 * 0.5); got > want*115/100 || got < 2*1000 {
		t.Errorf("two fills of 500 ms on a 1 Mbit/s line sent %d bytes, want at most about %d and some from each", got, want)
	}
}
