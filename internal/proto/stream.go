package proto

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
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
	setup      Exchange
	setupTaken bool
}

func (c *streamClient) Multiplexes() bool { return false }
func (c *streamClient) Connections() int  { return 1 }
func (c *streamClient) Close() error      { return c.closer.Close() }

func (c *streamClient) Exchange(ctx context.Context, reqSize, respSize int) (Exchange, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ex := Exchange{Start: time.Now(), ConnID: 1}
	if !c.setupTaken {
		c.setupTaken = true
		ex.NewConn, ex.Connect, ex.Handshake, ex.Resumed, ex.EarlyData = true, c.setup.Connect, c.setup.Handshake, c.setup.Resumed, c.setup.EarlyData
	}
	if dl, ok := c.stream.(deadliner); ok {
		if d, ok := ctx.Deadline(); ok {
			dl.SetDeadline(d)
			defer dl.SetDeadline(time.Time{})
		}
		defer interruptOnCancel(ctx, dl)()
	}
	if err := writeRequest(c.stream, reqSize, respSize); err != nil {
		return ex, orCanceled(ctx, err)
	}
	if c.br == nil {
		c.br = bufio.NewReaderSize(c.stream, 16<<10)
	}
	first, done, n, err := readResponse(c.br)
	ex.FirstByte, ex.Done, ex.RespBytes = first, done, n
	return ex, orCanceled(ctx, err)
}

// deadliner is a connection or stream with deadlines (net.Conn,
// *quic.Stream).
type deadliner interface{ SetDeadline(time.Time) error }

// interruptOnCancel makes blocked reads and writes on s return once ctx is
// cancelled, by moving its deadline into the past: a long transfer stops at
// Ctrl-C instead of running to its end. The returned function ends the
// watch.
func interruptOnCancel(ctx context.Context, s deadliner) (stop func() bool) {
	return context.AfterFunc(ctx, func() { s.SetDeadline(time.Unix(1, 0)) })
}

// orCanceled reports a context's end rather than the deadline error it
// caused. The connection's deadline may fire a moment before the context's
// own timer, so a passed deadline counts too.
func orCanceled(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return err
}

// listenTCP opens the server's TCP listener with the congestion control.
func listenTCP(n Net, port int, s Settings) (net.Listener, error) {
	lc := &net.ListenConfig{Control: s.control}
	return n.ListenWith(lc, "tcp4", ":"+strconv.Itoa(port))
}

// dialTCP connects with the congestion control and returns how long the
// TCP handshake took.
func dialTCP(ctx context.Context, n Net, addr string, s Settings) (net.Conn, time.Duration, error) {
	d := &net.Dialer{Control: s.control}
	t0 := time.Now()
	c, err := n.DialContext(ctx, d, "tcp4", addr)
	return c, time.Since(t0), err
}

// acceptLoop serves every accepted connection with handle until the
// listener closes.
type acceptLoop struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool
}

func startAcceptLoop(ln net.Listener, handle func(net.Conn) error) *acceptLoop {
	a := &acceptLoop{ln: ln, open: map[net.Conn]bool{}}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.open[c] = true
			a.mu.Unlock()
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				handle(c)
				c.Close()
				a.mu.Lock()
				delete(a.open, c)
				a.mu.Unlock()
			}()
		}
	}()
	return a
}

// Close stops accepting, closes open connections and waits for handlers.
func (a *acceptLoop) Close() error {
	err := a.ln.Close()
	a.mu.Lock()
	for c := range a.open {
		c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
