package reqresp

import (
	"bufio"
	"context"
	"io"
	"sync"
	"time"
	"tlab/internal/proto"
)

// streamClient runs exchanges one at a time over one persistent
// bidirectional stream (a TCP connection, a TLS connection or one QUIC
// stream). It cannot multiplex: an exchange due while another is
// outstanding must wait for it.
type streamClient struct {
	mu     sync.Mutex
	stream io.ReadWriter
	br     *bufio.Reader
	closer io.Closer
	// The first exchange reports the connection set-up.
	setup      proto.Exchange
	setupTaken bool
}

func (c *streamClient) Multiplexes() bool { return false }
func (c *streamClient) Connections() int  { return 1 }
func (c *streamClient) Close() error      { return c.closer.Close() }

func (c *streamClient) Exchange(ctx context.Context, reqSize, respSize int) (proto.Exchange, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ex := proto.Exchange{Start: time.Now(), ConnID: 1}
	if !c.setupTaken {
		c.setupTaken = true
		ex.NewConn, ex.Connect, ex.Handshake, ex.Resumed, ex.EarlyData = true, c.setup.Connect, c.setup.Handshake, c.setup.Resumed, c.setup.EarlyData
	}
	if dl, ok := c.stream.(proto.Deadliner); ok {
		if d, ok := ctx.Deadline(); ok {
			dl.SetDeadline(d)
			defer dl.SetDeadline(time.Time{})
		}
		defer proto.InterruptOnCancel(ctx, dl)()
	}
	if err := writeRequest(c.stream, reqSize, respSize); err != nil {
		return ex, proto.OrCanceled(ctx, err)
	}
	if c.br == nil {
		c.br = bufio.NewReaderSize(c.stream, 16<<10)
	}
	first, done, n, err := readResponse(c.br)
	ex.FirstByte, ex.Done, ex.RespBytes = first, done, n
	return ex, proto.OrCanceled(ctx, err)
}
