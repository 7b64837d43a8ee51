package proto

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

func init() {
	register("quic", func() Protocol { return quicProto{perRequest: false} }, "key_exchange", "resumption", "zero_rtt", "quic_stream_window", "quic_stream_window_max", "quic_conn_window", "quic_conn_window_max")
	register("quic-streams", func() Protocol { return quicProto{perRequest: true} }, "key_exchange", "resumption", "zero_rtt", "quic_stream_window", "quic_stream_window_max", "quic_conn_window", "quic_conn_window_max")
}

// quicProto is QUIC with length-prefixed messages, either on one stream for
// the whole session ("quic", which cannot multiplex) or on one
// client-initiated bidirectional stream per request ("quic-streams").
type quicProto struct{ perRequest bool }

func (q quicProto) Name() string {
	if q.perRequest {
		return "quic-streams"
	}
	return "quic"
}

// quicConfig is the quic-go configuration of both ends, and the qlog files
// it writes (nil without a qlog directory).
func quicConfig(s Settings) (*quic.Config, *qlogFiles) {
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
	q := &qlogFiles{dir: s.QlogDir}
	c.Tracer = q.trace
	return c, q
}

// qlogFiles writes one qlog file per connection into dir, named by
// connection ID and role, as quic-go's own QLOGDIR tracer does. quic-go
// finishes a file in the background after its connection closed; Wait
// lets a closing endpoint return only once its files are complete.
type qlogFiles struct {
	dir  string
	open sync.WaitGroup
}

func (q *qlogFiles) trace(_ context.Context, isClient bool, id quic.ConnectionID) qlogwriter.Trace {
	_ = qlog.EventSchema // the qlog package registers its event schema
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return nil
	}
	role := "server"
	if isClient {
		role = "client"
	}
	f, err := os.Create(filepath.Join(q.dir, fmt.Sprintf("%s_%s.sqlog", id, role)))
	if err != nil {
		return nil
	}
	q.open.Add(1)
	seq := qlogwriter.NewConnectionFileSeq(&bufferedFile{w: bufio.NewWriter(f), f: f, closed: q.open.Done}, isClient, id)
	go seq.Run()
	return seq
}

// Wait waits, at most a few seconds, until every file is complete.
func (q *qlogFiles) Wait() {
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

type quicServer struct {
	ln    *quic.EarlyListener
	conn  *net.UDPConn
	wg    sync.WaitGroup
	qlogs *qlogFiles
}

// listenEarly opens a UDP socket in the host on port and an early QUIC
// listener (0-RTT when the settings allow it) speaking alpn on it.
func listenEarly(n Net, port int, s Settings, alpn string) (*quic.EarlyListener, *net.UDPConn, *qlogFiles, error) {
	udp, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, nil, nil, err
	}
	qc, qlogs := quicConfig(s)
	ln, err := quic.ListenEarly(udp, quicTLS(s.serverTLS(alpn)), qc)
	if err != nil {
		udp.Close()
		return nil, nil, nil, err
	}
	return ln, udp, qlogs, nil
}

func (q quicProto) Serve(n Net, port int, s Settings) (io.Closer, error) {
	ln, udp, qlogs, err := listenEarly(n, port, s, alpnTLab)
	if err != nil {
		return nil, err
	}
	srv := &quicServer{ln: ln, conn: udp, qlogs: qlogs}
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			srv.wg.Add(1)
			go func() {
				defer srv.wg.Done()
				for {
					st, err := c.AcceptStream(context.Background())
					if err != nil {
						return
					}
					srv.wg.Add(1)
					go func() {
						defer srv.wg.Done()
						serveStream(st)
						st.Close()
					}()
				}
			}()
		}
	}()
	return srv, nil
}

func (s *quicServer) Close() error {
	err := s.ln.Close()
	s.conn.Close()
	s.wg.Wait()
	s.qlogs.Wait()
	return err
}

// dialQUIC opens a UDP socket in the host and dials over it. With 0-RTT
// allowed it dials early, so that a resumed connection can send at once.
func dialQUIC(ctx context.Context, n Net, addr string, tlsConf *tls.Config, qc *quic.Config, early bool) (*quic.Conn, *net.UDPConn, error) {
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

func (q quicProto) NewClient(ctx context.Context, n Net, addr string, s Settings) (Client, error) {
	t0 := time.Now()
	qc, qlogs := quicConfig(s)
	conn, udp, err := dialQUIC(ctx, n, addr, quicTLS(s.clientTLS(alpnTLab)), qc, false)
	if err != nil {
		return nil, err
	}
	state := conn.ConnectionState()
	setup := Exchange{Handshake: time.Since(t0), Resumed: state.TLS.DidResume, EarlyData: state.Used0RTT}
	closer := closeAll{func() error { return conn.CloseWithError(0, "done") }, udp.Close, func() error { qlogs.Wait(); return nil }}
	if q.perRequest {
		return &quicStreamsClient{conn: conn, closer: closer, setup: setup}, nil
	}
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		closer.Close()
		return nil, err
	}
	return &streamClient{stream: st, closer: closer, setup: setup}, nil
}

// quicStreamsClient opens one stream per exchange on one connection, so
// exchanges overlap freely.
type quicStreamsClient struct {
	conn       *quic.Conn
	closer     io.Closer
	setup      Exchange
	setupTaken atomic.Bool
}

func (c *quicStreamsClient) Multiplexes() bool { return true }
func (c *quicStreamsClient) Connections() int  { return 1 }
func (c *quicStreamsClient) Close() error      { return c.closer.Close() }

func (c *quicStreamsClient) Exchange(ctx context.Context, reqSize, respSize int) (Exchange, error) {
	ex := Exchange{Start: time.Now(), ConnID: 1}
	if c.setupTaken.CompareAndSwap(false, true) {
		ex.NewConn, ex.Handshake, ex.Resumed, ex.EarlyData = true, c.setup.Handshake, c.setup.Resumed, c.setup.EarlyData
	}
	st, err := c.conn.OpenStreamSync(ctx)
	if err != nil {
		return ex, err
	}
	if d, ok := ctx.Deadline(); ok {
		st.SetDeadline(d)
	}
	defer interruptOnCancel(ctx, st)()
	if err := writeRequest(st, reqSize, respSize); err != nil {
		st.CancelRead(0)
		return ex, orCanceled(ctx, err)
	}
	st.Close() // FIN: this stream carries one request
	first, done, n, err := readResponse(bufio.NewReaderSize(st, 16<<10))
	ex.FirstByte, ex.Done, ex.RespBytes = first, done, n
	if err != nil {
		st.CancelRead(0)
	}
	return ex, orCanceled(ctx, err)
}

// closeAll closes each in turn and joins the errors.
type closeAll []func() error

func (c closeAll) Close() error {
	var errs []error
	for _, f := range c {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
