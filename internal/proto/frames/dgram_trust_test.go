package frames

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tlab/internal/proto"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
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
	return startUDPFramesAfter(t, fps, 0)
}

// startUDPFramesAfter is startUDPFrames whose results take processing.
func startUDPFramesAfter(t *testing.T, fps float64, processing time.Duration) *net.UDPAddr {
	t.Helper()
	probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	srv, err := udpFrames{}.ServeFrames(proto.LocalNet{}, port, proto.DefaultSettings(), proto.FrameOptions{FPS: fps, ReassemblyTimeout: 200 * time.Millisecond},
		func(proto.FrameArrival) int { time.Sleep(processing); return proto.MaxResultSize })
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

// TestUDPFrameServerIsTheFirstStreamsAlone: datagrams that are not
// frames name no stream; the first stream's frame is answered; frames from another port of the same address are not, and
// the kernel refuses them (the server's socket is connected to the
// stream: the other port's connected socket reads the ICMP port
// unreachable); the stream is still answered after them.
func TestUDPFrameServerIsTheFirstStreamsAlone(t *testing.T) {
	server := startUDPFrames(t, 30)
	stream, other := dialCounted(t, server), dialCounted(t, server)
	// What is not a frame names no stream, even when it comes first.
	other.conn.Write([]byte("not a frame"))
	other.conn.Write(resultDatagram(7, 100))
	time.Sleep(50 * time.Millisecond)
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

// TestUDPServerConnAdmitsTheStreamOnly drives firstPeer by hand: nothing
// invalid (for udp, what is not a frame fragment) names the stream; the
// first valid datagram does; then its address is admitted in either form
// a dual-stack socket reads it (IPv4, IPv4-mapped IPv6) and no other port
// or address is.
func TestUDPServerConnAdmitsTheStreamOnly(t *testing.T) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var f firstPeer
	stream := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}
	if f.admit(udp, stream, false) {
		t.Error("a datagram that may not name the stream named it")
	}
	if !f.admit(udp, stream, true) {
		t.Fatal("the first frame was not admitted")
	}
	mapped := &net.UDPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 4000}
	if !f.admit(udp, mapped, true) || !f.admit(udp, stream, false) {
		t.Error("the stream's address (also read as IPv4-mapped IPv6) was refused")
	}
	for _, from := range []*net.UDPAddr{{IP: net.IPv4(127, 0, 0, 1), Port: 4001}, {IP: net.IPv4(127, 0, 0, 2), Port: 4000}, {IP: net.IPv6loopback, Port: 4000}} {
		if f.admit(udp, from, true) {
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
	most := int64(50 + 5*time.Since(start).Seconds() + 1)
	t.Logf("200 frames at once drew %d results in %v", got, time.Since(start))
	if got > most {
		t.Errorf("200 frames at once drew %d results, want at most %d at 5 frames a second", got, most)
	}
	if got < 10 {
		t.Errorf("200 frames drew %d results: the allowance answers none", got)
	}
}

// TestRTPFrameServerIsTheFirstStreamsAlone: the same for RTP. The
// stream's client sends a frame and, a second later, its first RTCP
// sender report; then another port of its address sends a 28-byte RTP
// packet carrying a whole frame of no payload (which asked a 1400-byte
// result) and a sender report (which asked a receiver report): it gets
// nothing back, and the kernel refuses both. The stream is answered
// after it.
func TestRTPFrameServerIsTheFirstStreamsAlone(t *testing.T) {
	probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	opts := proto.FrameOptions{FPS: 30, ReassemblyTimeout: 200 * time.Millisecond}
	srv, err := rtpFrames{}.ServeFrames(proto.LocalNet{}, port, proto.DefaultSettings(), opts, func(proto.FrameArrival) int { return proto.MaxResultSize })
	if err != nil {
		t.Skipf("RTP on %d and %d: %v", port, port+1, err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := rtpFrames{}.DialFrames(ctx, proto.LocalNet{}, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), proto.DefaultSettings(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	result := func(id uint32) bool {
		if _, err := cl.Send(id, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-cl.Results():
			return true
		case <-time.After(3 * time.Second):
			return false
		}
	}
	if !result(1) {
		t.Fatal("the stream's first frame drew no result")
	}
	time.Sleep(1200 * time.Millisecond) // the client's first sender report
	other := dialCounted(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	otherRTCP := dialCounted(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port + 1})
	pkt := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: rtpPayloadType, SSRC: rtpSSRC, Marker: true}}
	if err := pkt.SetExtension(rtpFrameExtID, frameExtensionBytes(999, 0)); err != nil {
		t.Fatal(err)
	}
	forged, err := pkt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sr, _ := (&rtcp.SenderReport{SSRC: rtpSSRC, PacketCount: 1}).Marshal()
	for i := range 5 {
		pkt.SequenceNumber = uint16(100 + i)
		other.conn.Write(forged)
		otherRTCP.conn.Write(sr)
		time.Sleep(20 * time.Millisecond)
	}
	if !result(2) {
		t.Error("the stream drew no result after another port's packets")
	}
	time.Sleep(200 * time.Millisecond)
	if n, m := other.bytes.Load(), otherRTCP.bytes.Load(); n != 0 || m != 0 {
		t.Errorf("another port of the stream's address drew %d bytes of results for %d-byte RTP packets and %d of receiver reports", n, len(forged), m)
	}
	if !other.refused.Load() || !otherRTCP.refused.Load() {
		t.Errorf("the kernel refused the other port's RTP %v, RTCP %v: want both (the sockets connected to the stream)", other.refused.Load(), otherRTCP.refused.Load())
	}
}

// TestUDPFrameServerOutlivesAClosedStreamPort: the stream's socket closes
// while its frame's result is being made (200 ms of processing); the
// result meets a closed port and the kernel tells the server's connected
// socket (ECONNREFUSED on its next read). The server goes on: the stream,
// back on the same port, is answered.
func TestUDPFrameServerOutlivesAClosedStreamPort(t *testing.T) {
	server := startUDPFramesAfter(t, 30, 200*time.Millisecond)
	first := dialCounted(t, server)
	local := first.conn.LocalAddr().(*net.UDPAddr)
	first.conn.Write(oneFrame(1))
	time.Sleep(50 * time.Millisecond)
	first.conn.Close()
	time.Sleep(400 * time.Millisecond) // the result has met the closed port
	again, err := net.DialUDP("udp", local, server)
	if err != nil {
		t.Skipf("the stream's port again: %v", err)
	}
	k := &counted{conn: again}
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := again.Read(buf)
			if err != nil {
				return
			}
			k.bytes.Add(int64(n))
		}
	}()
	defer again.Close()
	again.Write(oneFrame(2))
	if !waitBytes(k, proto.MaxResultSize, 3*time.Second) {
		t.Error("the stream back on its port drew no result: the server stopped at the ICMP error of its last result")
	}
}

// TestRTPFrameServerAnswersAtTheStreamsRate: as for udp, an RTP stream
// at 5 frames a second that sends 200 frames at once draws at most 50
// results and 5 more a second.
func TestRTPFrameServerAnswersAtTheStreamsRate(t *testing.T) {
	probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	opts := proto.FrameOptions{FPS: 5, ReassemblyTimeout: 200 * time.Millisecond}
	srv, err := rtpFrames{}.ServeFrames(proto.LocalNet{}, port, proto.DefaultSettings(), opts, func(proto.FrameArrival) int { return proto.MaxResultSize })
	if err != nil {
		t.Skipf("RTP on %d and %d: %v", port, port+1, err)
	}
	defer srv.Close()
	cl, err := rtpFrames{}.DialFrames(context.Background(), proto.LocalNet{}, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), proto.DefaultSettings(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	for i := range 200 {
		if _, err := cl.Send(uint32(i), make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		if i%20 == 19 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	got := 0
	for deadline := time.After(time.Second - time.Since(start)); ; {
		select {
		case <-cl.Results():
			got++
			continue
		case <-deadline:
		}
		break
	}
	most := int(50 + 5*time.Since(start).Seconds() + 1)
	if got > most || got < 10 {
		t.Errorf("200 RTP frames at once drew %d results, want 10 to %d at 5 frames a second", got, most)
	}
}
