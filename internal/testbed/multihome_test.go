package testbed

import (
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/units"
)

// echoTimes is what a pinger saw: for each packet, when it was sent
// (on the emulator's link clock, which the handovers' times count on)
// and its round trip, or -1 when no echo came.
type echoTimes struct {
	sent []time.Duration
	rtt  []time.Duration
}

// pingService sends a UDP packet every interval for total from the
// multi-homed host to the peer's service address, echoed there, from an
// unbound socket: each packet takes the route in force when it is sent.
func pingService(t *testing.T, tb *Testbed, interval, total time.Duration) echoTimes {
	t.Helper()
	srv, err := tb.Host("server").ListenPacket("udp4", ":7007")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go udpEcho(srv)
	ip, err := tb.Addr("client", "server")
	if err != nil {
		t.Fatal(err)
	}
	c, err := tb.Host("client").ListenUDP(&net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := int(total / interval)
	out := echoTimes{sent: make([]time.Duration, n), rtt: make([]time.Duration, n)}
	for i := range out.rtt {
		out.rtt[i] = -1
	}
	start := time.Now()
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			k, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			if k < 4 {
				continue
			}
			seq := int(binary.BigEndian.Uint32(buf))
			mu.Lock()
			if seq < n {
				out.rtt[seq] = time.Since(start) - out.sent[seq]
			}
			mu.Unlock()
		}
	}()
	dst := &net.UDPAddr{IP: ip, Port: 7007}
	for i := 0; i < n; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(i))
		mu.Lock()
		out.sent[i] = time.Since(start)
		mu.Unlock()
		if _, err := c.WriteTo(b[:], dst); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the last echoes
	c.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	zero := tb.LinkClockZero()
	if zero.IsZero() {
		t.Fatal("the testbed says nothing of its link clock")
	}
	for i := range out.sent {
		out.sent[i] += start.Sub(zero)
	}
	return out
}

// twoLinks is a client on a "wifi" link (10 ms each way) and a "5g"
// link (3 ms each way) to one server.
func twoLinks(t *testing.T, handovers ...Handover) Topology {
	t.Helper()
	topo, err := MultiHomed("client", "server", []string{"wifi", "5g"},
		[]emu.LinkConfig{delayLoss(10*time.Millisecond, 0), delayLoss(3*time.Millisecond, 0)}, handovers)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// handoverSlack is how far from its due time a packet's fate may be
// decided on this busy shared host: the handover's timer and the
// pinger's sleep both wake late by up to a few milliseconds on a quiet
// host, tens on a loaded one.
const handoverSlack = 40 * time.Millisecond

// TestBreakBeforeMakeDropsTheOutageAndMovesTheRoute: with wifi taken
// down at 1 s and 5g up with the route at 1.5 s, a packet sent before
// 1 s returns over wifi in 20 ms (2 x 10 ms), one sent during the outage
// never returns (wifi drops it, and 5g has no route yet), and one sent
// after 1.5 s returns over 5g in 6 ms (2 x 3 ms). The answered packets'
// longest silence is the outage: at least 0.5 s less one interval, at
// most 0.5 s plus the old round trip (a packet sent up to 20 ms before
// 1 s loses its echo) plus the slack.
func TestBreakBeforeMakeDropsTheOutageAndMovesTheRoute(t *testing.T) {
	at, outage := time.Second, 500*time.Millisecond
	tb := build(t, twoLinks(t, Handover{At: units.Duration(at), From: "wifi", To: "5g", Outage: units.Duration(outage)}), Options{Seed: 1})
	if l, err := tb.ActiveLink(); err != nil || l != "wifi" {
		t.Fatalf("at the start the route is on %q (%v), want wifi", l, err)
	}
	const interval = 5 * time.Millisecond
	e := pingService(t, tb, interval, 2500*time.Millisecond)
	if l, err := tb.ActiveLink(); err != nil || l != "5g" {
		t.Fatalf("after the handover the route is on %q (%v), want 5g", l, err)
	}
	// Every packet sent outside the outage is answered; a round trip may
	// be held up by a busy host's stall (tens of ms here), so each phase's
	// round trip is its median: 20 ms over wifi, 6 ms over 5g.
	var before, after []time.Duration
	var gapFrom, gapTo, last time.Duration = 0, 0, -1
	for i, s := range e.sent {
		r := e.rtt[i]
		switch {
		case s > 100*time.Millisecond && s < at-20*time.Millisecond-handoverSlack:
			if r < 0 {
				t.Errorf("packet sent at %v before the handover was not answered", s)
			}
			before = append(before, r)
		case s > at+handoverSlack && s < at+outage-handoverSlack:
			if r >= 0 {
				t.Errorf("packet sent at %v in the outage came back after %v", s, r)
			}
		case s > at+outage+handoverSlack:
			if r < 0 {
				t.Errorf("packet sent at %v after the handover was not answered", s)
			}
			after = append(after, r)
		}
		if r >= 0 {
			if last >= 0 && s-last > gapTo-gapFrom {
				gapFrom, gapTo = last, s
			}
			last = s
		}
	}
	for _, phase := range []struct {
		name string
		rtts []time.Duration
		want time.Duration
	}{{"before the handover, over wifi", before, 20 * time.Millisecond}, {"after it, over 5g", after, 6 * time.Millisecond}} {
		slices.Sort(phase.rtts)
		if len(phase.rtts) == 0 {
			t.Fatalf("no packets %s", phase.name)
		}
		med := phase.rtts[len(phase.rtts)/2]
		t.Logf("median round trip %s: %v of %d packets", phase.name, med, len(phase.rtts))
		if med < phase.want || med > phase.want+handoverSlack/4 {
			t.Errorf("median round trip %s %v, want %v", phase.name, med, phase.want)
		}
	}
	gap := gapTo - gapFrom
	t.Logf("longest silence: packets sent from %v to %v (%v)", gapFrom, gapTo, gap)
	if gap < outage-interval || gap > outage+20*time.Millisecond+2*handoverSlack {
		t.Errorf("longest silence %v, want the outage %v (up to the old round trip and the slack more)", gap, outage)
	}
	var downs, ups int
	for _, ev := range tb.Emulator().LiveEvents() {
		if ev.Source != emu.EventHandover || ev.At < at/2 {
			continue // not a handover, or the links' state at the start
		}
		t.Logf("%s %s at %v: loss %v", ev.Link, ev.Direction, ev.At, ev.State.Loss)
		switch {
		case ev.Link == "wifi" && ev.State.Loss == 1 && ev.At > at-handoverSlack && ev.At < at+handoverSlack:
			downs++
		case ev.Link == "5g" && ev.State.Loss == 0 && ev.At > at+outage-handoverSlack && ev.At < at+outage+handoverSlack:
			ups++
		default:
			t.Errorf("unexpected handover event %+v", ev)
		}
	}
	if downs != 2 || ups != 2 {
		t.Errorf("recorded %d wifi-down and %d 5g-up direction events, want 2 each (both directions)", downs, ups)
	}
}

// TestMakeBeforeBreakLosesNothing: with 5g up and routed at 1 s and
// wifi down only 300 ms later, every packet returns: those in flight on
// wifi at 1 s come back within 20 ms, long before wifi goes.
func TestMakeBeforeBreakLosesNothing(t *testing.T) {
	at := time.Second
	tb := build(t, twoLinks(t, Handover{At: units.Duration(at), From: "wifi", To: "5g", Overlap: units.Duration(300 * time.Millisecond)}), Options{Seed: 1})
	e := pingService(t, tb, 5*time.Millisecond, 2*time.Second)
	lost := 0
	for i, r := range e.rtt {
		if r < 0 {
			lost++
			t.Logf("lost: packet sent at %v", e.sent[i])
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d packets lost in a make-before-break handover, want 0", lost, len(e.rtt))
	}
	if l, err := tb.ActiveLink(); err != nil || l != "5g" {
		t.Fatalf("after the handover the route is on %q (%v), want 5g", l, err)
	}
}

// TestMultiHomeRefusesImpossibleHandovers: a handover must start from the
// link that has the route, name the host's links, and be of one kind.
func TestMultiHomeRefusesImpossibleHandovers(t *testing.T) {
	for name, h := range map[string]Handover{
		"from the idle link": {At: units.Duration(time.Second), From: "5g", To: "wifi"},
		"unknown link":       {At: units.Duration(time.Second), From: "wifi", To: "lte"},
		"both kinds":         {At: units.Duration(time.Second), From: "wifi", To: "5g", Outage: units.Duration(time.Second), Overlap: units.Duration(time.Second)},
		"negative":           {At: units.Duration(-time.Second), From: "wifi", To: "5g"},
	} {
		if err := twoLinks(t, h).Validate(); err == nil {
			t.Errorf("%s: accepted %+v", name, h)
		}
	}
	if err := twoLinks(t, Handover{At: units.Duration(time.Second), From: "wifi", To: "5g"}, Handover{At: units.Duration(2 * time.Second), From: "5g", To: "wifi"}).Validate(); err != nil {
		t.Errorf("there and back refused: %v", err)
	}
}

// TestConnectedUDPServerKeepsHearingTheClient: a UDP server that connects
// its socket to the first client it hears (as tlab's frame servers do)
// takes the service address the client sent to as its own, so the
// client's next datagrams, sent to that address, still reach it, and its
// answers come from it.
func TestConnectedUDPServerKeepsHearingTheClient(t *testing.T) {
	tb := build(t, twoLinks(t), Options{Seed: 1})
	srv, err := tb.Host("server").ListenUDP(&net.UDPAddr{Port: 7008})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ip, _ := tb.Addr("client", "server")
	c, err := tb.Host("client").ListenUDP(&net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dst := &net.UDPAddr{IP: ip, Port: 7008}
	buf := make([]byte, 16)
	for i := 0; i < 3; i++ {
		if _, err := c.WriteTo([]byte{byte(i)}, dst); err != nil {
			t.Fatal(err)
		}
		srv.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, from, err := srv.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("datagram %d did not reach the server: %v", i, err)
		}
		if i == 0 {
			// Connect to the first client, as a frame server does.
			if err := connectUDPForTest(srv, from); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := srv.Write(buf[:n]); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, answer, err := c.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if !answer.IP.Equal(ip) {
			t.Errorf("answer %d came from %v, want the service address %v", i, answer.IP, ip)
		}
	}
}

// connectUDPForTest connects c to to with connect(2), behind Go's back,
// as a frame server does to the first peer it hears.
func connectUDPForTest(c *net.UDPConn, to *net.UDPAddr) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	err = rc.Control(func(fd uintptr) {
		sa := &syscall.SockaddrInet4{Port: to.Port}
		copy(sa.Addr[:], to.IP.To4())
		cerr = syscall.Connect(int(fd), sa)
	})
	return errors.Join(err, cerr)
}
