package proto

// The transport layer every family shares: sockets in a host, accept
// loops, cancellation of blocked reads, QUIC configuration and qlog files.

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"

	"tlab/internal/results"
)

// Deadliner is a connection or stream with deadlines (net.Conn,
// *quic.Stream).
type Deadliner interface{ SetDeadline(time.Time) error }

// InterruptOnCancel makes blocked reads and writes on s return once ctx is
// cancelled, by moving its deadline into the past: a long transfer stops at
// Ctrl-C instead of running to its end. The returned function ends the
// watch; it reports whether the interrupt was kept from happening.
//
// Once the interrupt has started, stop waits for it to finish: a
// context.AfterFunc that has begun runs in its own goroutine, and a stop
// that returned at once let a timed-out exchange's past deadline land on
// the stream after the next exchange had set its own, failing that one
// with an i/o timeout it never had (a persistent stream's exchanges run
// one after another on one connection).
func InterruptOnCancel(ctx context.Context, s Deadliner) (stop func() bool) {
	interrupted := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		defer close(interrupted)
		s.SetDeadline(time.Unix(1, 0))
	})
	var once sync.Once
	var kept bool
	return func() bool {
		once.Do(func() {
			kept = stopWatch()
			if !kept {
				<-interrupted
			}
		})
		return kept
	}
}

// OrCanceled reports a context's end rather than the deadline error it
// caused. The connection's deadline may fire a moment before the context's
// own timer, so a passed deadline counts too.
func OrCanceled(ctx context.Context, err error) error {
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

// ListenTCP opens the server's TCP listener with the congestion control.
func ListenTCP(n Net, port int, s Settings) (net.Listener, error) {
	lc := &net.ListenConfig{Control: s.Control}
	return n.ListenWith(lc, "tcp4", ":"+strconv.Itoa(port))
}

// DialTCP connects with the congestion control and returns how long the
// TCP handshake took.
func DialTCP(ctx context.Context, n Net, addr string, s Settings) (net.Conn, time.Duration, error) {
	d := &net.Dialer{Control: s.Control}
	t0 := time.Now()
	c, err := n.DialContext(ctx, d, "tcp4", addr)
	took := time.Since(t0)
	if err == nil {
		s.TCP.Observe(c)
	}
	return c, took, err
}

// AcceptLoop serves every accepted connection with handle until the
// listener closes.
type AcceptLoop struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool
}

func StartAcceptLoop(ln net.Listener, handle func(net.Conn) error) *AcceptLoop {
	a := &AcceptLoop{ln: ln, open: map[net.Conn]bool{}}
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
func (a *AcceptLoop) Close() error {
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

// QUICConfig is the quic-go configuration of both ends, and the qlog files
// it writes (nil without a qlog directory).
func QUICConfig(s Settings) (*quic.Config, *QlogFiles) {
	c := &quic.Config{
		MaxIdleTimeout:     30 * time.Second,
		MaxIncomingStreams: 1 << 16,
		Allow0RTT:          s.ZeroRTT,
		KeepAlivePeriod:    10 * time.Second,
		// Zero keeps quic-go's defaults.
		InitialStreamReceiveWindow:     uint64(s.StreamWindow),
		MaxStreamReceiveWindow:         uint64(s.StreamWindowMax),
		InitialConnectionReceiveWindow: uint64(s.ConnWindow),
		MaxConnectionReceiveWindow:     uint64(s.ConnWindowMax),
	}
	if s.QlogDir == "" {
		return c, nil
	}
	q := &QlogFiles{dir: s.QlogDir}
	c.Tracer = q.trace
	return c, q
}

// QlogFiles writes one qlog file per connection into dir, named by
// connection ID and role, as quic-go's own QLOGDIR tracer does. quic-go
// finishes a file in the background after its connection closed; Wait
// lets a closing endpoint return only once its files are complete.
type QlogFiles struct {
	dir  string
	open sync.WaitGroup
}

func (q *QlogFiles) trace(_ context.Context, isClient bool, id quic.ConnectionID) qlogwriter.Trace {
	_ = qlog.EventSchema // the qlog package registers its event schema
	if err := results.MkdirAll(q.dir); err != nil {
		return nil
	}
	role := "server"
	if isClient {
		role = "client"
	}
	f, err := results.Create(filepath.Join(q.dir, fmt.Sprintf("%s_%s.sqlog", id, role)))
	if err != nil {
		return nil
	}
	q.open.Add(1)
	seq := qlogwriter.NewConnectionFileSeq(&bufferedFile{w: bufio.NewWriter(f), f: f, closed: q.open.Done}, isClient, id)
	go seq.Run()
	return seq
}

// Wait waits, at most a few seconds, until every file is complete.
func (q *QlogFiles) Wait() {
	if q == nil {
		return
	}
	done := make(chan struct{})
	go func() { q.open.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

type bufferedFile struct {
	w      *bufio.Writer
	f      *os.File
	closed func()
}

func (b *bufferedFile) Write(p []byte) (int, error) { return b.w.Write(p) }
func (b *bufferedFile) Close() error {
	defer b.closed()
	return errors.Join(b.w.Flush(), b.f.Close())
}

// ListenEarly opens a UDP socket in the host on port and an early QUIC
// listener (0-RTT when the settings allow it) speaking alpn on it.
func ListenEarly(n Net, port int, s Settings, alpn string) (*quic.EarlyListener, *net.UDPConn, *QlogFiles, error) {
	udp, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, nil, nil, err
	}
	qc, qlogs := QUICConfig(s)
	ln, err := quic.ListenEarly(udp, QUICTLS(s.ServerTLS(alpn)), qc)
	if err != nil {
		udp.Close()
		return nil, nil, nil, err
	}
	return ln, udp, qlogs, nil
}

// DialQUIC opens a UDP socket in the host and dials over it. With 0-RTT
// allowed it dials early, so that a resumed connection can send at once.
func DialQUIC(ctx context.Context, n Net, addr string, tlsConf *tls.Config, qc *quic.Config, early bool) (*quic.Conn, *net.UDPConn, error) {
	raddr, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, nil, err
	}
	udp, err := n.ListenUDP(&net.UDPAddr{})
	if err != nil {
		return nil, nil, err
	}
	var c *quic.Conn
	if early {
		c, err = quic.DialEarly(ctx, udp, raddr, tlsConf, qc)
	} else {
		c, err = quic.Dial(ctx, udp, raddr, tlsConf, qc)
	}
	if err != nil {
		udp.Close()
		return nil, nil, err
	}
	return c, udp, nil
}

// CloseAll closes each in turn and joins the errors.
type CloseAll []func() error

func (c CloseAll) Close() error {
	var errs []error
	for _, f := range c {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CloserFunc adapts a function to io.Closer.
type CloserFunc func() error

func (f CloserFunc) Close() error { return f() }

// HostPort joins an address and a port.
func HostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }
