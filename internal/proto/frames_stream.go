package proto

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
)

// Stream transports carry a frame as [id 4][length 4][payload]: tcp on one
// connection, frame after frame without waiting for results (open loop);
// quic-streams on a stream of its own per frame. Results come back as
// [id 4][length 4][bytes]. A stream transport reports a frame as one packet
// whose hash is the frame id, sent when its first byte was written and
// arrived when its last byte was read.

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
	if size > maxMessage {
		err = fmt.Errorf("frame of %d bytes exceeds %d", size, maxMessage)
		return
	}
	if _, err = r.Discard(size); err != nil {
		return
	}
	return id, size, first, time.Now(), nil
}

func streamPacket(id uint32, at time.Time, size int) Packet {
	return Packet{Hash: uint64(id), At: at, Size: size}
}

// serveFrameStream answers every frame on one stream until it ends.
func serveFrameStream(rw io.ReadWriter, onFrame func(FrameArrival) int, wmu *sync.Mutex) {
	br := bufio.NewReaderSize(rw, 64<<10)
	for {
		id, size, first, last, err := readStreamFrame(br)
		if err != nil {
			return
		}
		a := FrameArrival{ID: id, Complete: true, Bytes: size, First: first, Last: last, Packets: []Packet{streamPacket(id, last, size)}}
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
func streamResults(r io.Reader, ch chan<- FrameResult) {
	br := bufio.NewReader(r)
	for {
		id, _, _, last, err := readStreamFrame(br)
		if err != nil {
			return
		}
		select {
		case ch <- FrameResult{ID: id, At: last}:
		default:
		}
	}
}

func (tcpProto) ServeFrames(n Net, port int, s Settings, _ FrameOptions, onFrame func(FrameArrival) int) (io.Closer, error) {
	ln, err := listenTCP(n, port, s)
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
	return closerFunc(func() error {
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
	results chan FrameResult
	done    chan struct{}
}

func (tcpProto) DialFrames(ctx context.Context, n Net, addr string, s Settings, _ FrameOptions) (FrameClient, error) {
	conn, err := n.DialContext(ctx, &net.Dialer{Control: s.control}, "tcp4", addr)
	if err != nil {
		return nil, err
	}
	c := &tcpFrameClient{conn: conn, results: make(chan FrameResult, 4096), done: make(chan struct{})}
	go func() { defer close(c.done); defer close(c.results); streamResults(conn, c.results) }()
	return c, nil
}

func (c *tcpFrameClient) Send(id uint32, payload []byte) ([]Packet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := time.Now()
	// A frame blocks here while the socket buffer is full: TCP's
	// back-pressure, which delays the next frame's send (the workload
	// records that lateness).
	return []Packet{streamPacket(id, at, len(payload)+streamFrameHeader)}, writeStreamFrame(c.conn, id, payload)
}

func (c *tcpFrameClient) Results() <-chan FrameResult { return c.results }

func (c *tcpFrameClient) Close() error {
	err := c.conn.Close()
	<-c.done
	return err
}

// quic-streams: a stream of its own per frame; the result comes back on it.

func (q quicProto) ServeFrames(n Net, port int, s Settings, _ FrameOptions, onFrame func(FrameArrival) int) (io.Closer, error) {
	if !q.perRequest {
		return nil, errors.New("quic carries one stream for everything: use quic-streams for frames")
	}
	udp, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	qc, qlogs := quicConfig(s)
	ln, err := quic.Listen(udp, quicTLS(s.serverTLS(alpnFrames)), qc)
	if err != nil {
		udp.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []*quic.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
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
	return closerFunc(func() error {
		err := ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.CloseWithError(0, "")
		}
		mu.Unlock()
		wg.Wait()
		udp.Close()
		qlogs.Wait()
		return err
	}), nil
}

type quicFrameClient struct {
	conn    *quic.Conn
	udp     *net.UDPConn
	results chan FrameResult
	wg      sync.WaitGroup
}

func (q quicProto) DialFrames(ctx context.Context, n Net, addr string, s Settings, _ FrameOptions) (FrameClient, error) {
	if !q.perRequest {
		return nil, errors.New("quic carries one stream for everything: use quic-streams for frames")
	}
	qc, _ := quicConfig(s)
	conn, udp, err := dialQUIC(ctx, n, addr, quicTLS(s.clientTLS(alpnFrames)), qc, false)
	if err != nil {
		return nil, err
	}
	return &quicFrameClient{conn: conn, udp: udp, results: make(chan FrameResult, 4096)}, nil
}

func (c *quicFrameClient) Send(id uint32, payload []byte) ([]Packet, error) {
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
	return []Packet{streamPacket(id, at, len(payload)+streamFrameHeader)}, nil
}

func (c *quicFrameClient) Results() <-chan FrameResult { return c.results }

func (c *quicFrameClient) Close() error {
	err := c.conn.CloseWithError(0, "")
	c.wg.Wait()
	c.udp.Close()
	close(c.results)
	return err
}
