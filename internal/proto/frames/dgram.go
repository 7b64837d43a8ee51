package frames

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"tlab/internal/kstamp"
	"tlab/internal/proto"

	"github.com/quic-go/quic-go"
)

func init() {
	proto.Register(proto.Registration{Name: "udp", Doc: "frames as UDP datagrams under the path MTU, reassembled with a timeout; no retransmission", Impl: udpFrames{}})
	proto.Register(proto.Registration{Name: "quic-dgram", Doc: "frames as QUIC DATAGRAM frames (RFC 9221), unreliable, reassembled with a timeout", Options: []string{"key_exchange", "resumption"}, Impl: quicDgramFrames{}})
}

// udpFrames carries each frame as datagrams under the path MTU with a small
// header (frame id, fragment index and count), reassembled at the server
// with a timeout: a frame missing a fragment is lost. No retransmission.
type udpFrames struct{}

func (udpFrames) Name() string { return "udp" }

// datagramConn is what udp and quic-dgram send and receive datagrams on.
type datagramConn interface {
	send([]byte) error
	// receive reads one datagram and when it arrived: the kernel's
	// receive time where the socket has it (a busy host's reader may get
	// to a datagram late, and stamping the read would move its delay and
	// squeeze a burst's spacing), else the read's.
	receive() ([]byte, time.Time, error)
	close() error
}

// serveDatagrams runs a frame server on one datagram conversation (a UDP
// socket with a reply address, or a QUIC connection). Its results go out
// at most at the stream's frame rate (resultAllowance).
func serveDatagrams(c datagramConn, o proto.FrameOptions, onFrame func(proto.FrameArrival) int) func() error {
	results := newResultAllowance(o.FPS)
	re := newReassembler(o.ReassemblyTimeout, func(a proto.FrameArrival) {
		if size := onFrame(a); size > 0 && a.Complete && results.take(time.Now()) {
			c.send(resultDatagram(a.ID, size))
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			d, at, err := c.receive()
			if err != nil {
				return
			}
			magic, id, idx, count, ok := parseFragHeader(d)
			if !ok || magic != fragMagic {
				continue
			}
			re.add(id, idx, len(d)-fragHeader, proto.Packet{Hash: proto.HashBytes(d), At: at, Size: len(d)}, func(pieces, _ int) bool { return pieces == count })
		}
	}()
	return func() error {
		err := c.close()
		<-done
		re.close()
		return err
	}
}

// resultBurst is how many seconds of its stream's results a frame server
// may send at once: a link that stalled that long and then delivers its
// queue of frames together still has every one answered.
const resultBurst = 10 * time.Second

// resultAllowance is a token bucket of results: the stream's frame rate a
// second, resultBurst of them at once. A frame costs its sender 12 bytes
// and may ask for a result of proto.MaxResultSize (1400): whoever sends
// frames faster than the stream's rate gets no more results for them, so
// a server answers no faster than the stream it serves would make it.
type resultAllowance struct {
	mu     sync.Mutex
	rate   float64 // results a second
	depth  float64
	tokens float64
	at     time.Time
}

func newResultAllowance(fps float64) *resultAllowance {
	depth := max(1, fps*resultBurst.Seconds())
	return &resultAllowance{rate: fps, depth: depth, tokens: depth}
}

// take spends one result at now, or says the stream's rate is used up.
func (r *resultAllowance) take(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && now.After(r.at) {
		r.tokens = min(r.depth, r.tokens+now.Sub(r.at).Seconds()*r.rate)
	}
	if now.After(r.at) {
		r.at = now
	}
	if r.tokens < 1 {
		return false
	}
	r.tokens--
	return true
}

// datagramClient sends fragments and reads results on a datagram conn.
type datagramClient struct {
	c       datagramConn
	chunk   int
	results chan proto.FrameResult
	done    chan struct{}
	once    sync.Once
}

func newDatagramClient(c datagramConn, chunk int) *datagramClient {
	dc := &datagramClient{c: c, chunk: chunk, results: make(chan proto.FrameResult, 4096), done: make(chan struct{})}
	go func() {
		defer close(dc.done)
		defer close(dc.results)
		for {
			d, at, err := c.receive()
			if err != nil {
				return
			}
			if magic, id, _, _, ok := parseFragHeader(d); ok && magic == resultMagic {
				select {
				case dc.results <- proto.FrameResult{ID: id, At: at}:
				default: // a reader that fell behind loses results, not the sender
				}
			}
		}
	}()
	return dc
}

func (dc *datagramClient) Send(id uint32, payload []byte) ([]proto.Packet, error) {
	var sent []proto.Packet
	for _, d := range fragment(id, payload, dc.chunk) {
		h := proto.HashBytes(d)
		at := time.Now()
		if err := dc.c.send(d); err != nil {
			return sent, err
		}
		sent = append(sent, proto.Packet{Hash: h, At: at, Size: len(d)})
	}
	return sent, nil
}

func (dc *datagramClient) Results() <-chan proto.FrameResult { return dc.results }

func (dc *datagramClient) Close() error {
	var err error
	dc.once.Do(func() { err = dc.c.close(); <-dc.done })
	return err
}

// udpServerConn belongs to one stream: the address (IP and port) its
// first frame came from (firstPeer).
type udpServerConn struct {
	udp    *net.UDPConn
	in     *kstamp.Conn // udp, read with the kernel's receive times
	stream firstPeer
}

// newUDPServerConn serves frames on udp, its arrivals stamped by the
// kernel.
func newUDPServerConn(udp *net.UDPConn) (*udpServerConn, error) {
	in, err := kstamp.Stamp(udp)
	if err != nil {
		return nil, err
	}
	return &udpServerConn{udp: udp, in: in}, nil
}

func (u *udpServerConn) receive() ([]byte, time.Time, error) {
	buf := make([]byte, 65536)
	for {
		n, from, at, err := readFromPeer(u.in, buf)
		if err != nil {
			return nil, time.Time{}, err
		}
		magic, _, _, _, ok := parseFragHeader(buf[:n])
		if u.stream.admit(u.udp, from, ok && magic == fragMagic) {
			return buf[:n], at, nil
		}
	}
}

// readFromPeer reads a datagram, and the kernel's time of its arrival,
// from a socket that firstPeer may have connected: a connected socket
// reports an ICMP error for what it sent (the stream's socket closed
// before its last result) on the next read, which is no reason to stop
// hearing it.
func readFromPeer(c *kstamp.Conn, buf []byte) (int, *net.UDPAddr, time.Time, error) {
	for {
		n, from, ns, err := c.ReadStamped(buf)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return n, from, time.Unix(0, ns), err
		}
	}
}

// firstPeer is the one address a server socket hears and answers: the one
// its first valid datagram came from (IP and port). From then on the
// socket is connected to it, so the kernel queues nothing from anywhere
// else, and admit refuses every other address itself: a datagram forged
// from the stream's IP with another port (the only source an agent's
// socket filter lets in) brings nothing back to that port, where a
// 12-byte frame once drew a 1400-byte result.
type firstPeer struct {
	mu sync.Mutex
	// peer is the stream's address, as read and in comparable form.
	peer   *net.UDPAddr
	peerAP netip.AddrPort
}

// admit says whether a datagram from from, read on c, belongs to the
// stream; valid says whether it may name the stream if none is yet.
func (f *firstPeer) admit(c *net.UDPConn, from *net.UDPAddr, valid bool) bool {
	ap := unmapped(from)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.peer != nil {
		return ap == f.peerAP
	}
	if !valid {
		return false
	}
	f.peer, f.peerAP = from, ap
	// The check above holds without it; connecting makes the kernel drop
	// the rest before it is queued, so a flood from other ports cannot
	// crowd the stream's datagrams out of the socket's buffer.
	connectUDP(c, from)
	return true
}

// get is the stream's address (nil before its first datagram).
func (f *firstPeer) get() *net.UDPAddr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peer
}

// unmapped is a UDP address as an AddrPort, an IPv4-mapped IPv6 address
// as its IPv4 one (a dual-stack socket reads either).
func unmapped(a *net.UDPAddr) netip.AddrPort {
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// connectUDP connects c to to (connect(2)) in the family of c's socket.
func connectUDP(c *net.UDPConn, to *net.UDPAddr) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	err = rc.Control(func(fd uintptr) {
		local, err := syscall.Getsockname(int(fd))
		if err != nil {
			cerr = err
			return
		}
		var sa syscall.Sockaddr
		switch local.(type) {
		case *syscall.SockaddrInet4:
			ip := to.IP.To4()
			if ip == nil {
				cerr = fmt.Errorf("an IPv4 socket cannot reach %v", to)
				return
			}
			a := &syscall.SockaddrInet4{Port: to.Port}
			copy(a.Addr[:], ip)
			sa = a
		case *syscall.SockaddrInet6:
			a := &syscall.SockaddrInet6{Port: to.Port}
			copy(a.Addr[:], to.IP.To16())
			sa = a
		default:
			cerr = fmt.Errorf("a socket of address %T", local)
			return
		}
		cerr = syscall.Connect(int(fd), sa)
	})
	return errors.Join(err, cerr)
}

func (u *udpServerConn) send(d []byte) error {
	peer := u.stream.get()
	if peer == nil {
		return errors.New("no client yet")
	}
	_, err := u.udp.WriteToUDP(d, peer)
	return err
}

func (u *udpServerConn) close() error { return u.udp.Close() }

// udpClientConn is a client's UDP socket towards the server.
type udpClientConn struct {
	udp    *net.UDPConn
	server *net.UDPAddr
}

func (u udpClientConn) receive() ([]byte, time.Time, error) {
	buf := make([]byte, 65536)
	n, _, err := u.udp.ReadFromUDP(buf)
	return buf[:n], time.Now(), err
}

func (u udpClientConn) send(d []byte) error { _, err := u.udp.WriteToUDP(d, u.server); return err }
func (u udpClientConn) close() error        { return u.udp.Close() }

func (udpFrames) ServeFrames(n proto.Net, port int, _ proto.Settings, o proto.FrameOptions, onFrame func(proto.FrameArrival) int) (io.Closer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	onFrame = proto.BoundedResults(onFrame)
	udp, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	if err := growReadBuffer(udp); err != nil {
		udp.Close()
		return nil, fmt.Errorf("udp frames: receive buffer: %w", err)
	}
	sc, err := newUDPServerConn(udp)
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("udp frames: %w", err)
	}
	return proto.CloserFunc(serveDatagrams(sc, o, onFrame)), nil
}

func (udpFrames) DialFrames(_ context.Context, n proto.Net, addr string, _ proto.Settings, _ proto.FrameOptions) (proto.FrameClient, error) {
	udp, server, err := udpTowards(n, addr)
	if err != nil {
		return nil, err
	}
	return newDatagramClient(udpClientConn{udp: udp, server: server}, udpMaxChunk), nil
}

// udpTowards opens a client's UDP socket in host n for the server at addr.
func udpTowards(n proto.Net, addr string) (*net.UDPConn, *net.UDPAddr, error) {
	server, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, nil, err
	}
	udp, err := n.ListenUDP(&net.UDPAddr{})
	return udp, server, err
}

// readResults passes the result datagrams arriving on udp to ch until the
// socket closes, then closes ch and done. A reader that fell behind loses
// results, never the sender.
func readResults(udp *net.UDPConn, ch chan<- proto.FrameResult, done chan<- struct{}) {
	defer close(done)
	defer close(ch)
	buf := make([]byte, 65536)
	for {
		n, _, err := udp.ReadFromUDP(buf)
		if err != nil {
			return
		}
		at := time.Now()
		if magic, id, _, _, ok := parseFragHeader(buf[:n]); ok && magic == resultMagic {
			select {
			case ch <- proto.FrameResult{ID: id, At: at}:
			default:
			}
		}
	}
}

// quicDgramFrames carries frames as QUIC datagrams (RFC 9221), fragmented
// as udp's: unreliable, but encrypted and congestion controlled.
type quicDgramFrames struct{}

func (quicDgramFrames) Name() string { return "quic-dgram" }

const alpnFrames = "tlab-frames"

// quicDatagrams is one QUIC connection's datagrams.
type quicDatagrams struct {
	conn *quic.Conn
	udp  *net.UDPConn
}

// receive stamps a QUIC datagram when quic-go hands it over: its socket
// is quic-go's, read by its own loop.
func (q quicDatagrams) receive() ([]byte, time.Time, error) {
	d, err := q.conn.ReceiveDatagram(context.Background())
	return d, time.Now(), err
}
func (q quicDatagrams) send(d []byte) error { return q.conn.SendDatagram(d) }
func (q quicDatagrams) close() error {
	err := q.conn.CloseWithError(0, "")
	if q.udp != nil {
		q.udp.Close()
	}
	return err
}

func (quicDgramFrames) ServeFrames(n proto.Net, port int, s proto.Settings, o proto.FrameOptions, onFrame func(proto.FrameArrival) int) (io.Closer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	onFrame = proto.BoundedResults(onFrame)
	udp, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	qc, qlogs := proto.QUICConfig(s)
	qc.EnableDatagrams = true
	ln, err := quic.Listen(udp, proto.QUICTLS(s.ServerTLS(alpnFrames)), qc)
	if err != nil {
		udp.Close()
		return nil, err
	}
	var mu sync.Mutex
	var stops []func() error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			mu.Lock()
			stops = append(stops, serveDatagrams(quicDatagrams{conn: conn}, o, onFrame))
			mu.Unlock()
		}
	}()
	return proto.CloserFunc(func() error {
		err := ln.Close()
		<-done
		mu.Lock()
		for _, stop := range stops {
			stop()
		}
		mu.Unlock()
		udp.Close()
		qlogs.Wait()
		return err
	}), nil
}

func (quicDgramFrames) DialFrames(ctx context.Context, n proto.Net, addr string, s proto.Settings, _ proto.FrameOptions) (proto.FrameClient, error) {
	qc, _ := proto.QUICConfig(s)
	qc.EnableDatagrams = true
	c := s.ClientTLS(alpnFrames)
	conn, udp, err := proto.DialQUIC(ctx, n, addr, proto.QUICTLS(c), qc, false)
	if err != nil {
		return nil, err
	}
	if !conn.ConnectionState().SupportsDatagrams.Remote {
		conn.CloseWithError(0, "")
		udp.Close()
		return nil, fmt.Errorf("quic-dgram: the server does not accept datagrams")
	}
	return newDatagramClient(quicDatagrams{conn: conn, udp: udp}, quicMaxChunk), nil
}
