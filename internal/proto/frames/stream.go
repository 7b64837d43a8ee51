package frames

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
	"tlab/internal/proto"

	"github.com/quic-go/quic-go"
)

// Stream transports carry a frame as [id 4][length 4][payload]: tcp on one
// connection, frame after frame without waiting for results (open loop);
// quic-streams on a stream of its own per frame. Results come back as
// [id 4][length 4][bytes]. A stream transport reports a frame as one packet
// whose hash is the frame id, sent when its first byte was written and
// arrived when its last byte was read.

func init() {
	proto.Register(proto.Registration{Name: "tcp", Doc: "frames: one after another on one TCP connection, open loop", Options: []string{"tcp_congestion", "tcp_ecn"}, Impl: tcpFrames{}})
	proto.Register(proto.Registration{Name: "quic-streams", Doc: "frames: a QUIC stream of its own per frame", Options: []string{"key_exchange", "resumption", "quic_stream_window", "quic_stream_window_max", "quic_conn_window", "quic_conn_window_max"}, Impl: quicStreamFrames{}})
}

// tcpFrames carries frames on one TCP connection; quicStreamFrames on a
// QUIC stream of their own each.
type (
	tcpFrames        struct{}
	quicStreamFrames struct{}
)

const streamFrameHeader = 8

func writeStreamFrame(w io.Writer, id uint32, payload []byte) error {
	var h [streamFrameHeader]byte
	binary.BigEndian.PutUint32(h[0:4], id)
	binary.BigEndian.PutUint32(h[4:8], uint32(len(payload)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// readStreamFrame reads one frame, returning when its header arrived and
// when its last byte did.
func readStreamFrame(r *bufio.Reader) (id uint32, size int, first, last time.Time, err error) {
	var h [streamFrameHeader]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return
	}
	first = time.Now()
	id, size = binary.BigEndian.Uint32(h[0:4]), int(binary.BigEndian.Uint32(h[4:8]))
	if size > proto.MaxMessage {
		err = fmt.Errorf("frame of %d bytes exceeds %d", size, proto.MaxMessage)
		return
	}
	if _, err = r.Discard(size); err != nil {
		return
	}
	return id, size, first, time.Now(), nil
}

func streamPacket(id uint32, at time.Time, size int) proto.Packet {
	return proto.Packet{Hash: uint64(id), At: at, Size: size}
}

// serveFrameStream answers every frame on one stream until it ends.
func serveFrameStream(rw io.ReadWriter, onFrame func(proto.FrameArrival) int, wmu *sync.Mutex) {
	br := bufio.NewReaderSize(rw, 64<<10)
	for {
		id, size, first, last, err := readStreamFrame(br)
		if err != nil {
			return
		}
		a := proto.FrameArrival{ID: id, Complete: true, Bytes: size, First: first, Last: last, Packets: []proto.Packet{streamPacket(id, last, size)}}
		if rs := onFrame(a); rs > 0 {
			wmu.Lock()
			err := writeStreamFrame(rw, id, make([]byte, rs))
			wmu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// streamResults reads results from r into ch until it ends.
func streamResults(r io.Reader, ch chan<- proto.FrameResult) {
	br := bufio.NewReader(r)
	for {
		id, _, _, last, err := readStreamFrame(br)
		if err != nil {
			return
		}
		select {
		case ch <- proto.FrameResult{ID: id, At: last}:
		default:
		}
	}
}

func (tcpFrames) ServeFrames(n proto.Net, port int, s proto.Settings, o proto.FrameOptions, onFrame func(proto.FrameArrival) int) (io.Closer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	onFrame = proto.BoundedResults(onFrame)
	ln, err := proto.ListenTCP(n, port, s)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveFrameStream(c, onFrame, &sync.Mutex{})
			}()
		}
	}()
	return proto.CloserFunc(func() error {
		err := ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
		return err
	}), nil
}

// tcpFrameClient writes frames back to back on one connection.
type tcpFrameClient struct {
	conn    net.Conn
	mu      sync.Mutex
	results chan proto.FrameResult
	done    chan struct{}
}

func (tcpFrames) DialFrames(ctx context.Context, n proto.Net, addr string, s proto.Settings, _ proto.FrameOptions) (proto.FrameClient, error) {
	conn, err := n.DialContext(ctx, &net.Dialer{Control: s.Control}, "tcp4", addr)
	if err != nil {
		return nil, err
	}
	s.TCP.Observe(conn)
	c := &tcpFrameClient{conn: conn, results: make(chan proto.FrameResult, 4096), done: make(chan struct{})}
	go func() { defer close(c.done); defer close(c.results); streamResults(conn, c.results) }()
	return c, nil
}

func (c *tcpFrameClient) Send(id uint32, payload []byte) ([]proto.Packet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := time.Now()
	// A frame blocks here while the socket buffer is full: TCP's
	// back-pressure, which delays the next frame's send (the workload
	// records that lateness).
	return []proto.Packet{streamPacket(id, at, len(payload)+streamFrameHeader)}, writeStreamFrame(c.conn, id, payload)
}

func (c *tcpFrameClient) Results() <-chan proto.FrameResult { return c.results }

func (c *tcpFrameClient) Close() error {
	err := c.conn.Close()
	<-c.done
	return err
}

// quic-streams: a stream of its own per frame; the result comes back on it.

func (quicStreamFrames) ServeFrames(n proto.Net, port int, s proto.Settings, o proto.FrameOptions, onFrame func(proto.FrameArrival) int) (io.Closer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	onFrame = proto.BoundedResults(onFrame)
	udp, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	qc, qlogs := proto.QUICConfig(s)
	ln, err := quic.Listen(udp, proto.QUICTLS(s.ServerTLS(alpnFrames)), qc)
	if err != nil {
		udp.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	// conns are the connections being served: Close ends them (a closed
	// listener leaves them alive), also one accepted while it closes.
	var conns proto.QUICConns
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			if !conns.Add(conn) {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conns.Remove(conn)
				for {
					st, err := conn.AcceptStream(context.Background())
					if err != nil {
						return
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						serveFrameStream(st, onFrame, &sync.Mutex{})
						st.Close()
					}()
				}
			}()
		}
	}()
	return proto.CloserFunc(func() error {
		err := ln.Close()
		conns.CloseAll()
		wg.Wait()
		udp.Close()
		qlogs.Wait()
		return err
	}), nil
}

type quicFrameClient struct {
	conn    *quic.Conn
	udp     *net.UDPConn
	results chan proto.FrameResult
	wg      sync.WaitGroup
}

func (quicStreamFrames) DialFrames(ctx context.Context, n proto.Net, addr string, s proto.Settings, _ proto.FrameOptions) (proto.FrameClient, error) {
	qc, _ := proto.QUICConfig(s)
	conn, udp, err := proto.DialQUIC(ctx, n, addr, proto.QUICTLS(s.ClientTLS(alpnFrames)), qc, false)
	if err != nil {
		return nil, err
	}
	return &quicFrameClient{conn: conn, udp: udp, results: make(chan proto.FrameResult, 4096)}, nil
}

func (c *quicFrameClient) Send(id uint32, payload []byte) ([]proto.Packet, error) {
	at := time.Now()
	st, err := c.conn.OpenStream()
	if err != nil {
		return nil, err
	}
	if err := writeStreamFrame(st, id, payload); err != nil {
		return nil, err
	}
	st.Close() // the frame is all this stream carries
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		streamResults(st, c.results)
	}()
	return []proto.Packet{streamPacket(id, at, len(payload)+streamFrameHeader)}, nil
}

func (c *quicFrameClient) Results() <-chan proto.FrameResult { return c.results }

func (c *quicFrameClient) Close() error {
	err := c.conn.CloseWithError(0, "")
	c.wg.Wait()
	c.udp.Close()
	close(c.results)
	return err
}
