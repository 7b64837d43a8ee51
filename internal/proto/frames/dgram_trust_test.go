package frames

import (
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tlab/internal/proto"
)

// A udp frame server belongs to the stream that spoke first (issue 48,
// finding 6): nothing from another address (the same IP, another port)
// is heard or answered, and results go out no faster than the stream's
// frame rate.

// oneFrame is a whole frame of no payload as the udp client sends it: 12
// bytes that may ask for a 1400-byte result.
func oneFrame(id uint32) []byte { return fragment(id, nil, udpMaxChunk)[0] }

// startUDPFrames serves udp frames on loopback with fps, each complete
// frame asking for a result of proto.MaxResultSize.
func startUDPFrames(t *testing.T, fps float64) *net.UDPAddr {
	t.Helper()
	probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	srv, err := udpFrames{}.ServeFrames(proto.LocalNet{}, port, proto.DefaultSettings(), proto.FrameOptions{FPS: fps, ReassemblyTimeout: 200 * time.Millisecond},
		func(proto.FrameArrival) int { return proto.MaxResultSize })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}
}

// counted is a client socket connected to the server, counting the bytes
// of results it reads, and keeping the first read error.
type counted struct {
	conn    *net.UDPConn
	bytes   atomic.Int64
	refused atomic.Bool
}

func dialCounted(t *testing.T, server *net.UDPAddr) *counted {
	t.Helper()
	c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, server)
	if err != nil {
		t.Fatal(err)
	}
	k := &counted{conn: c}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := c.Read(buf)
			if errors.Is(err, syscall.ECONNREFUSED) {
				k.refused.Store(true)
				continue
			}
			if err != nil {
				return
			}
			k.bytes.Add(int64(n))
		}
	}()
	t.Cleanup(func() { c.Close() })
	return k
}

func waitBytes(k *counted, n int64, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if k.bytes.Load() >= n {
			return true
		}
	}
	return k.bytes.Load() >= n
}

// TestUDPFrameServerIsTheFirstStreamsAlone: the first stream's frame is
// answered; frames from another port of the same address are not, and
// the kernel refuses them (the server's socket is connected to the
// stream: the other port's connected socket reads the ICMP port
// unreachable); the stream is still answered after them.
func TestUDPFrameServerIsTheFirstStreamsAlone(t *testing.T) {
	server := startUDPFrames(t, 30)
	stream, other := dialCounted(t, server), dialCounted(t, server)
	stream.conn.Write(oneFrame(1))
	if !waitBytes(stream, proto.MaxResultSize, 3*time.Second) {
		t.Fatalf("the stream's first frame drew %d bytes, want its %d-byte result", stream.bytes.Load(), proto.MaxResultSize)
	}
	for i := range 10 {
		other.conn.Write(oneFrame(uint32(100 + i)))
		time.Sleep(20 * time.Millisecond)
	}
	stream.conn.Write(oneFrame(2))
	if !waitBytes(stream, 2*proto.MaxResultSize, 3*time.Second) {
		t.Errorf("the stream drew %d bytes after another port's frames, want two results", stream.bytes.Load())
	}
	time.Sleep(200 * time.Millisecond)
	if n := other.bytes.Load(); n != 0 {
		t.Errorf("another port of the stream's address drew %d bytes for 120 bytes of frames", n)
	}
	if !other.refused.Load() {
		t.Error("the other port's frames were taken off the wire by the server's socket: it is not connected to the stream")
	}
}

// TestUDPServerConnAdmitsTheStreamOnly drives admit by hand: nothing
// that is not a frame fragment names the stream; the first fragment
// does; then its address is admitted in either form a dual-stack socket
// reads it (IPv4, IPv4-mapped IPv6) and no other port or address is.
func TestUDPServerConnAdmitsTheStreamOnly(t *testing.T) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	u := &udpServerConn{udp: udp}
	stream := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}
	if u.admit(stream, []byte("not a frame at all")) {
		t.Error("a datagram that is not a frame named the stream")
	}
	if result := resultDatagram(1, 100); u.admit(stream, result) {
		t.Error("a result datagram named the stream")
	}
	if !u.admit(stream, oneFrame(1)) {
		t.Fatal("the first frame was not admitted")
	}
	mapped := &net.UDPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 4000}
	if !u.admit(mapped, oneFrame(2)) {
		t.Error("the stream's address read as IPv4-mapped IPv6 was refused")
	}
	for _, from := range []*net.UDPAddr{{IP: net.IPv4(127, 0, 0, 1), Port: 4001}, {IP: net.IPv4(127, 0, 0, 2), Port: 4000}, {IP: net.IPv6loopback, Port: 4000}} {
		if u.admit(from, oneFrame(3)) {
			t.Errorf("a frame from %v was admitted after the stream's from %v", from, stream)
		}
	}
}

// TestResultsKeepTheStreamsRate: a token bucket of the stream's frame
// rate (30 a second) and resultBurst (10 s) of depth: 300 results at
// once, the 301st refused; 1 s later 30 more, not 31; a clock that steps
// back and forth again gives nothing.
func TestResultsKeepTheStreamsRate(t *testing.T) {
	r := newResultAllowance(30)
	t0 := time.Unix(1000, 0)
	granted := 0
	for range 1000 {
		if r.take(t0) {
			granted++
		}
	}
	if granted != 300 {
		t.Errorf("%d results at once at 30 frames a second, want 300 (10 s of them)", granted)
	}
	granted = 0
	for range 100 {
		if r.take(t0.Add(time.Second)) {
			granted++
		}
	}
	if granted != 30 {
		t.Errorf("%d results a second later, want 30", granted)
	}
	if r.take(t0.Add(500 * time.Millisecond)) {
		t.Error("a clock stepped back granted a result")
	}
	// Nor does it when it comes back: no time passed after t0 + 1 s.
	if r.take(t0.Add(time.Second)) {
		t.Error("a clock stepped back and forth again granted a result")
	}
}

// TestUDPFrameServerAnswersAtTheStreamsRate: a stream at 5 frames a
// second that sends 200 frames at once (2400 bytes, asking for 280 kB of
// results) draws at most the allowance's 50 (10 s of them) and 5 more a
// second: 55 within the second the test waits, 77 kB.
func TestUDPFrameServerAnswersAtTheStreamsRate(t *testing.T) {
	server := startUDPFrames(t, 5)
	stream := dialCounted(t, server)
	start := time.Now()
	for i := range 200 {
		stream.conn.Write(oneFrame(uint32(i)))
		if i%20 == 19 {
			time.Sleep(5 * time.Millisecond) // within the socket's buffers
		}
	}
	time.Sleep(time.Second - time.Since(start))
	got := stream.bytes.Load() / proto.MaxResultSize
	max := int64(50 + 5*time.Since(start).Seconds() + 1)
	t.Logf("200 frames at once drew %d results in %v", got, time.Since(start))
	if got > max {
		t.Errorf("200 frames at once drew %d results, want at most %d at 5 frames a second", got, max)
	}
	if got < 10 {
		t.Errorf("200 frames drew %d results: the allowance answers none", got)
	}
}
