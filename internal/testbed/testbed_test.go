package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/emu"
	"tlab/internal/sysx"
	"tlab/internal/units"
)

func build(t *testing.T, topo Topology, opts Options) *Testbed {
	t.Helper()
	requirePrivileges(t)
	tb, err := Build(topo, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return tb
}

func delayLoss(delay time.Duration, loss float64) emu.LinkConfig {
	d := emu.DirectionConfig{Delay: units.Duration(delay)}
	if loss > 0 {
		d.Loss = emu.LossConfig{Model: emu.LossBernoulli, Rate: units.Ratio(loss)}
	}
	return emu.LinkConfig{Up: d, Down: d}
}

// udpEcho serves UDP echoes until the connection closes.
func udpEcho(c net.PacketConn) {
	buf := make([]byte, 2048)
	for {
		n, addr, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		c.WriteTo(buf[:n], addr)
	}
}

// TestUDPThroughDelayedLossyLink runs echoes through each engine. Both
// read the same frames in the same order, so the same seed must drop the
// same datagrams: the loss count on the way up is compared across engines.
func TestUDPThroughDelayedLossyLink(t *testing.T) {
	upLost := map[string]uint64{}
	for _, engine := range emu.Engines() {
		t.Run(engine, func(t *testing.T) { upLost[engine] = udpEchoes(t, engine) })
	}
	if t.Failed() {
		return
	}
	if a, b := upLost[emu.EngineMmsg], upLost[emu.EngineRing]; a != b {
		t.Errorf("seed 1 lost %d datagrams on the way up with the mmsg engine, %d with the ring", a, b)
	}
}

// echoClient starts a UDP echo server on the server host and returns a
// client's connection to it; both close when the test ends.
func echoClient(t *testing.T, tb *Testbed) net.Conn {
	t.Helper()
	srv, err := tb.Host("server").ListenPacket("udp4", ":9000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	go udpEcho(srv)
	ip, _ := tb.Addr("client", "server")
	conn, err := tb.Host("client").DialContext(context.Background(), nil, "udp4", net.JoinHostPort(ip.String(), "9000"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// udpEchoes sends datagrams through a lossy, delayed link with engine,
// checks what came back and the emulator's counters, and returns how many
// the link lost on the way up.
func udpEchoes(t *testing.T, engine string) uint64 {
	const oneWay, loss, n = 10 * time.Millisecond, 0.05, 2000
	tb := build(t, ClientServer(delayLoss(oneWay, loss)), Options{Seed: 1, Emulator: emu.EngineOptions{Engine: engine}})
	conn := echoClient(t, tb)

	start := time.Now()
	rtts := make(chan time.Duration, n)
	go func() {
		buf := make([]byte, 64)
		for {
			conn.SetReadDeadline(time.Now().Add(time.Second))
			m, err := conn.Read(buf)
			if err != nil || m < 8 {
				close(rtts)
				return
			}
			sent := time.Duration(binary.LittleEndian.Uint64(buf))
			rtts <- time.Since(start) - sent
		}
	}()
	msg := make([]byte, 64)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(msg, uint64(time.Since(start)))
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Microsecond)
	}
	got := 0
	minRTT := time.Hour
	for r := range rtts {
		got++
		minRTT = min(minRTT, r)
	}
	// Each echo crosses the lossy link twice: it survives with (1-p)^2.
	p := (1 - loss) * (1 - loss)
	half := 2.576 * math.Sqrt(p*(1-p)/n) * n
	if want := p * n; !(math.Abs(float64(got)-want) <= half) {
		t.Errorf("%d of %d echoes returned, want %.0f ± %.0f", got, n, want, half)
	}
	if minRTT < 2*oneWay {
		t.Errorf("an echo returned in %v, faster than the emulated RTT %v", minRTT, 2*oneWay)
	}
	st, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	path, _ := st.Link("path")
	if path.Up.RxPackets != n || path.Up.TxPackets+path.Up.DropLoss != n {
		t.Errorf("up counters %+v do not add up to %d datagrams", path.Up, n)
	}
	if path.Down.TxPackets != uint64(got) {
		t.Errorf("down delivered %d frames, client read %d echoes", path.Down.TxPackets, got)
	}
	// 64-byte payload + 8 UDP + 20 IP + 14 Ethernet = 106-byte frames.
	if path.Up.RxBytes != n*106 {
		t.Errorf("up counted %d bytes, want %d (106-byte frames)", path.Up.RxBytes, n*106)
	}
	// The loop's own account: it read every frame (the datagrams and
	// their echoes), the kernel dropped none before it, and its busy
	// time is part of its running time.
	if st.Loop.Received < uint64(n+got) || st.Loop.KernelDrops != 0 {
		t.Errorf("the loop read %d frames with %d kernel drops; %d went through it", st.Loop.Received, st.Loop.KernelDrops, n+got)
	}
	if st.Loop.BusyNs <= 0 || st.Loop.BusyNs >= st.ClockNs {
		t.Errorf("the loop was busy %d ns of %d", st.Loop.BusyNs, st.ClockNs)
	}
	t.Logf("min RTT %v, %d/%d echoes, lateness %+v, loop %+v", minRTT, got, n, st.Lateness, st.Loop)
	return path.Up.DropLoss
}

// transfer sends n random bytes over TCP from the client host to the
// server host on port and fails the test unless they all arrive, intact,
// within a minute.
func transfer(t *testing.T, tb *Testbed, port, n int) {
	t.Helper()
	ln, err := tb.Host("server").Listen("tcp4", ":"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	payload := make([]byte, n)
	rand.Read(payload)
	received := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		received <- b
	}()
	ip, _ := tb.Addr("client", "server")
	c, err := tb.Host("client").DialContext(context.Background(), nil, "tcp4", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(payload); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case got := <-received:
		if !bytes.Equal(got, payload) {
			t.Fatalf("received %d bytes, not the %d sent", len(got), len(payload))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("transfer did not finish in 60 s")
	}
}

func TestTCPThroughDelayedLossyLink(t *testing.T) {
	for _, engine := range emu.Engines() {
		t.Run(engine, func(t *testing.T) {
			tb := build(t, ClientServer(delayLoss(5*time.Millisecond, 0.01)), Options{Seed: 2, Emulator: emu.EngineOptions{Engine: engine}})
			start := time.Now()
			transfer(t, tb, 9001, 2<<20)
			st, _ := tb.Emulator().Stats()
			path, _ := st.Link("path")
			if path.Up.DropLoss == 0 {
				t.Error("1 % loss over a 2 MB transfer dropped nothing")
			}
			t.Logf("2 MiB over 10 ms RTT with 1%% loss in %v; up %+v", time.Since(start), path.Up)
		})
	}
}

func TestDirectBaselineAndTopologies(t *testing.T) {
	tb := build(t, ClientServer(emu.LinkConfig{}), Options{Direct: true})
	if tb.Emulator() != nil {
		t.Fatal("a direct testbed started an emulator")
	}
	srv, err := tb.Host("server").ListenPacket("udp4", ":9002")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go udpEcho(srv)
	ip, _ := tb.Addr("client", "server")
	conn, err := tb.Host("client").DialContext(context.Background(), nil, "udp4", net.JoinHostPort(ip.String(), "9002"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte("ping"))
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 16)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("direct echo: %q, %v", buf[:n], err)
	}
}

func TestChainAndSharedAccess(t *testing.T) {
	chain, err := Chain([]string{"pub", "broker", "sub"}, []emu.LinkConfig{delayLoss(time.Millisecond, 0), delayLoss(2*time.Millisecond, 0)})
	if err != nil {
		t.Fatal(err)
	}
	tb := build(t, chain, Options{})
	// The broker sits on both links; each end reaches it on its own subnet.
	for _, from := range []string{"pub", "sub"} {
		ip, err := tb.Addr(from, "broker")
		if err != nil {
			t.Fatal(err)
		}
		checkEcho(t, tb, from, "broker", ip)
	}
	if _, err := tb.Addr("pub", "sub"); err == nil {
		t.Error("pub and sub share no link, yet got an address")
	}

	shared := SharedAccess([]string{"h1", "h2", "h3"}, "server", delayLoss(time.Millisecond, 0))
	tb2 := build(t, shared, Options{})
	for _, h := range []string{"h1", "h2", "h3"} {
		ip, _ := tb2.Addr(h, "server")
		checkEcho(t, tb2, h, "server", ip)
	}
	st, _ := tb2.Emulator().Stats()
	access, _ := st.Link("access")
	if access.Up.TxPackets != 3 || access.Down.TxPackets != 3 {
		t.Errorf("shared access forwarded %d up and %d down, want 3 and 3 (no flooding of unicast)", access.Up.TxPackets, access.Down.TxPackets)
	}
}

var echoPort = 9100

func checkEcho(t *testing.T, tb *Testbed, from, to string, ip net.IP) {
	t.Helper()
	echoPort++
	srv, err := tb.Host(to).ListenPacket("udp4", net.JoinHostPort(ip.String(), itoa(echoPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go udpEcho(srv)
	conn, err := tb.Host(from).DialContext(context.Background(), nil, "udp4", net.JoinHostPort(ip.String(), itoa(echoPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte(from))
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 32)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != from {
		t.Fatalf("%s -> %s echo: %q, %v", from, to, buf[:n], err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestECNMarksThroughTheEngine: through the real engine, a CoDel queue
// with ECN marks the packets of a TCP flow that asked for ECN (tcp_ecn =
// 1 in the hosts' namespaces) instead of dropping them, and the marked
// frames still arrive whole (their IPv4 checksum fixed: 2 MiB arrive
// intact); without ECN the same queue drops.
func TestECNMarksThroughTheEngine(t *testing.T) {
	for _, ecn := range []bool{true, false} {
		up := emu.DirectionConfig{Rate: 20e6, Delay: units.Duration(5 * time.Millisecond), QueuePackets: 200,
			Queue: emu.QueueConfig{Type: emu.CoDelName, ECN: true}}
		down := emu.DirectionConfig{Delay: units.Duration(5 * time.Millisecond)}
		tb := build(t, ClientServer(emu.LinkConfig{Up: up, Down: down}), Options{Seed: 3, TCPECN: ecn})
		transfer(t, tb, 9002, 8<<20)
		st, _ := tb.Emulator().Stats()
		path, _ := st.Link("path")
		t.Logf("ecn %v: 8 MiB at 20 Mbit/s through CoDel: %d marked, %d dropped by the queue", ecn, path.Up.ECNMarked, path.Up.DropQueue)
		if ecn && (path.Up.ECNMarked == 0 || path.Up.DropQueue > path.Up.ECNMarked/10) {
			t.Errorf("with ECN: %d marks and %d queue drops; CoDel should mark, not drop", path.Up.ECNMarked, path.Up.DropQueue)
		}
		if !ecn && (path.Up.ECNMarked != 0 || path.Up.DropQueue == 0) {
			t.Errorf("without ECN: %d marks and %d queue drops; CoDel can only drop", path.Up.ECNMarked, path.Up.DropQueue)
		}
	}
}

// cpuSets reads the affinity of every thread of process pid.
func cpuSets(t *testing.T, pid int) map[int]unix.CPUSet {
	t.Helper()
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	sets := map[int]unix.CPUSet{}
	for _, e := range entries {
		tid, _ := strconv.Atoi(e.Name())
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) == nil {
			sets[tid] = set
		}
	}
	return sets
}

// TestEmulatorLivesOnItsCPU: while a testbed runs, every thread of the
// engine is pinned to the emulator's CPU (a preempted loop is resumed by its
// own thread there, never handed between CPUs), and the busy loop never
// parks: its thread blocks not once while frames flow.
func TestEmulatorLivesOnItsCPU(t *testing.T) {
	cpu := sysx.EmulatorCPU()
	if cpu < 0 {
		t.Skip("one CPU: the loop shares it with everything")
	}
	// The busy loop: it never blocks by design, so a voluntary switch is
	// the runtime parking it (the adaptive loop blocks when idle).
	tb := build(t, ClientServer(delayLoss(time.Millisecond, 0)), Options{Seed: 1, Emulator: emu.EngineOptions{Mode: emu.ModeBusy}})
	var want unix.CPUSet
	want.Set(cpu)
	for tid, set := range cpuSets(t, tb.Emulator().PID()) {
		if set != want {
			t.Errorf("engine thread %d may run on %d CPUs, not CPU %d alone", tid, set.Count(), cpu)
		}
	}
	before, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	conn := echoClient(t, tb)
	buf := make([]byte, 64)
	// A second and more of echoes: ten preemption periods of the runtime.
	for i := 0; i < 500; i++ {
		conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Read(buf); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	after, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	loop := after.Loop.Sub(before.Loop)
	secs := float64(after.ClockNs-before.ClockNs) / 1e9
	// The former placement (the loop locked to its thread, the runtime's
	// other threads elsewhere) parked 13-91 times a second.
	if loop.VoluntarySwitches > 2 {
		t.Errorf("the loop thread blocked %d times in %.1f s: the runtime parked it", loop.VoluntarySwitches, secs)
	}
	t.Logf("%.1f s: the loop lost its CPU %d times voluntarily, %d times to another thread", secs, loop.VoluntarySwitches, loop.InvoluntarySwitches)
}
