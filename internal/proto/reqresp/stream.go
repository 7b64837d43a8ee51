package reqresp

import (
	"bufio"
	"context"
	"fmt"
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
	// owed counts the responses of failed exchanges still to come: an
	// exchange whose wait for its response ended before any byte of it
	// (a timeout) leaves it in the stream, ahead of the next one's, and
	// the next exchange reads and drops it first. Without this, every
	// later exchange would take its predecessor's response for its own.
	owed int
	// broken is set when a failure left the stream within a message (a
	// request not wholly written, a response partly read): nothing after
	// can be told apart, so every later exchange fails at once.
	broken error
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
	if c.broken != nil {
		return ex, c.broken
	}
	if err := writeRequest(c.stream, reqSize, respSize); err != nil {
		c.broken = fmt.Errorf("the stream is out of step since a request was cut: %w", err)
		return ex, proto.OrCanceled(ctx, err)
	}
	if c.br == nil {
		c.br = bufio.NewReaderSize(c.stream, 16<<10)
	}
	for c.owed > 0 {
		first, _, _, err := readResponse(c.br)
		if err != nil {
			if !first.IsZero() {
				c.broken = fmt.Errorf("the stream is out of step since a response was cut: %w", err)
			}
			c.owed++ // this exchange's own response is owed too
			return ex, proto.OrCanceled(ctx, err)
		}
		c.owed--
	}
	first, done, n, err := readResponse(c.br)
	ex.FirstByte, ex.Done, ex.RespBytes = first, done, n
	if err != nil {
		if first.IsZero() {
			c.owed++
		} else {
			c.broken = fmt.Errorf("the stream is out of step since a response was cut: %w", err)
		}
	}
	return ex, proto.OrCanceled(ctx, err)
}
