package reqresp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"tlab/internal/proto"
)

func init() {
	proto.Register(proto.Registration{Name: "udp", Doc: "UDP, one datagram each way per exchange (at most 65 497 B of payload), no retransmission: a lost datagram is a failed exchange", Impl: udpProto{}})
}

// udpProto is request/response over bare UDP, as irtt, DNS or a game's
// state updates do: a request datagram carries a sequence number and the
// response size it asks for, and the server answers with one datagram of
// that size to whoever sent it. Exchanges overlap freely; nothing is
// retransmitted.
type udpProto struct{}

func (udpProto) Name() string { return "udp" }

// The datagrams: magic 'T' 'U', kind, a spare byte, the sequence number,
// and (in a request) the response's payload size, then the payload.
const (
	udpHeader     = 12
	udpRequest    = 'Q'
	udpResponse   = 'R'
	maxUDPPayload = 65507 - udpHeader // the largest IPv4 UDP payload, less the header
)

// udpDatagram is one request or response as it travels.
type udpDatagram struct {
	Kind     byte
	Seq      uint32
	RespSize uint32 // in a request: the response payload asked for
}

func (d udpDatagram) marshal(payload int) []byte {
	b := make([]byte, udpHeader+payload)
	b[0], b[1], b[2] = 'T', 'U', d.Kind
	binary.BigEndian.PutUint32(b[4:], d.Seq)
	binary.BigEndian.PutUint32(b[8:], d.RespSize)
	return b
}

// parseUDPDatagram reads a datagram's header; it refuses what is not one
// of tlab's, and a request for more than one datagram can carry.
func parseUDPDatagram(b []byte) (udpDatagram, error) {
	if len(b) < udpHeader || b[0] != 'T' || b[1] != 'U' {
		return udpDatagram{}, errors.New("not a tlab udp datagram")
	}
	d := udpDatagram{Kind: b[2], Seq: binary.BigEndian.Uint32(b[4:]), RespSize: binary.BigEndian.Uint32(b[8:])}
	switch {
	case d.Kind != udpRequest && d.Kind != udpResponse:
		return udpDatagram{}, fmt.Errorf("udp datagram kind %q", d.Kind)
	case d.Kind == udpRequest && d.RespSize > maxUDPPayload:
		return udpDatagram{}, fmt.Errorf("a request for %d bytes: one datagram carries at most %d", d.RespSize, maxUDPPayload)
	}
	return d, nil
}

func (udpProto) Serve(n proto.Net, port int, _ proto.Settings) (io.Closer, error) {
	c, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 65536)
		for {
			k, from, err := c.ReadFromUDP(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			d, err := parseUDPDatagram(buf[:k])
			if err != nil || d.Kind != udpRequest {
				continue
			}
			c.WriteToUDP(udpDatagram{Kind: udpResponse, Seq: d.Seq}.marshal(int(d.RespSize)), from)
		}
	}()
	return proto.CloserFunc(func() error {
		err := c.Close()
		<-done
		return err
	}), nil
}

func (udpProto) NewClient(ctx context.Context, n proto.Net, addr string, _ proto.Settings) (proto.Client, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	conn, err := n.ListenUDP(&net.UDPAddr{})
	if err != nil {
		return nil, err
	}
	c := &udpClient{conn: conn, to: raddr, waiting: map[uint32]chan time.Time{}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

// udpClient sends requests and matches responses by sequence number.
type udpClient struct {
	conn *net.UDPConn
	to   *net.UDPAddr

	mu      sync.Mutex
	seq     uint32
	waiting map[uint32]chan time.Time
	first   bool
	done    chan struct{}
}

func (c *udpClient) Multiplexes() bool { return true }
func (c *udpClient) Connections() int  { return 1 }

func (c *udpClient) Close() error {
	err := c.conn.Close()
	<-c.done
	return err
}

// read hands each response to the exchange waiting for it; a response
// nobody waits for (late, duplicated, not tlab's) is dropped.
func (c *udpClient) read() {
	defer close(c.done)
	buf := make([]byte, 65536)
	for {
		k, from, err := c.conn.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		at := time.Now()
		d, err := parseUDPDatagram(buf[:k])
		if err != nil || d.Kind != udpResponse || !from.IP.Equal(c.to.IP) || from.Port != c.to.Port {
			continue
		}
		c.mu.Lock()
		ch := c.waiting[d.Seq]
		delete(c.waiting, d.Seq)
		c.mu.Unlock()
		if ch != nil {
			ch <- at // the arrival, read by the exchange
			close(ch)
		}
	}
}

func (c *udpClient) Exchange(ctx context.Context, reqSize, respSize int) (proto.Exchange, error) {
	if reqSize > maxUDPPayload || respSize > maxUDPPayload || reqSize < 0 || respSize < 0 {
		return proto.Exchange{}, fmt.Errorf("udp: a request of %d B and a response of %d B: one datagram each carries at most %d", reqSize, respSize, maxUDPPayload)
	}
	c.mu.Lock()
	c.seq++
	seq := c.seq
	ch := make(chan time.Time, 1)
	c.waiting[seq] = ch
	ex := proto.Exchange{ConnID: 1}
	if !c.first {
		c.first, ex.NewConn = true, true
	}
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.waiting, seq)
		c.mu.Unlock()
	}
	ex.Start = time.Now()
	if _, err := c.conn.WriteToUDP(udpDatagram{Kind: udpRequest, Seq: seq, RespSize: uint32(respSize)}.marshal(reqSize), c.to); err != nil {
		forget()
		return ex, proto.OrCanceled(ctx, err)
	}
	select {
	case at := <-ch:
		ex.FirstByte, ex.Done, ex.RespBytes = at, at, respSize
		return ex, nil
	case <-ctx.Done():
		forget()
		return ex, ctx.Err()
	}
}
