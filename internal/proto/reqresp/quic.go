package reqresp

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"tlab/internal/proto"

	"github.com/quic-go/quic-go"
)

func init() {
	proto.Register(proto.Registration{Name: "quic", Doc: "QUIC (quic-go), one stream for the whole session; one exchange at a time", Options: []string{"key_exchange", "resumption", "zero_rtt", "quic_stream_window", "quic_stream_window_max", "quic_conn_window", "quic_conn_window_max"}, Impl: quicProto{perRequest: false}})
	proto.Register(proto.Registration{Name: "quic-streams", Doc: "QUIC, one client-initiated bidirectional stream per request; multiplexes", Options: []string{"key_exchange", "resumption", "zero_rtt", "quic_stream_window", "quic_stream_window_max", "quic_conn_window", "quic_conn_window_max"}, Impl: quicProto{perRequest: true}})
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

type quicServer struct {
	ln    *quic.EarlyListener
	conn  *net.UDPConn
	wg    sync.WaitGroup
	qlogs *proto.QlogFiles
	// conns are the accepted connections still open: Close ends them
	// itself (closing the listener does not).
	conns proto.QUICConns
}

func (q quicProto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	ln, udp, qlogs, err := proto.ListenEarly(n, port, s, alpnTLab)
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
			if !srv.conns.Add(c) {
				return
			}
			srv.wg.Add(1)
			go func() {
				defer srv.wg.Done()
				defer srv.conns.Remove(c)
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
	s.conns.CloseAll()
	s.conn.Close()
	s.wg.Wait()
	s.qlogs.Wait()
	return err
}

func (q quicProto) NewClient(ctx context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	t0 := time.Now()
	qc, qlogs := proto.QUICConfig(s)
	conn, udp, err := proto.DialQUIC(ctx, n, addr, proto.QUICTLS(s.ClientTLS(alpnTLab)), qc, false)
	if err != nil {
		return nil, err
	}
	state := conn.ConnectionState()
	setup := proto.Exchange{Handshake: time.Since(t0), Resumed: state.TLS.DidResume, EarlyData: state.Used0RTT}
	closer := proto.CloseAll{func() error { return conn.CloseWithError(0, "done") }, udp.Close, func() error { qlogs.Wait(); return nil }}
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
	setup      proto.Exchange
	setupTaken atomic.Bool
}

func (c *quicStreamsClient) Multiplexes() bool { return true }
func (c *quicStreamsClient) Connections() int  { return 1 }
func (c *quicStreamsClient) Close() error      { return c.closer.Close() }

func (c *quicStreamsClient) Exchange(ctx context.Context, reqSize, respSize int) (proto.Exchange, error) {
	ex := proto.Exchange{Start: time.Now(), ConnID: 1}
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
	defer proto.InterruptOnCancel(ctx, st)()
	if err := writeRequest(st, reqSize, respSize); err != nil {
		st.CancelRead(0)
		return ex, proto.OrCanceled(ctx, err)
	}
	st.Close() // FIN: this stream carries one request
	first, done, n, err := readResponse(bufio.NewReaderSize(st, 16<<10))
	ex.FirstByte, ex.Done, ex.RespBytes = first, done, n
	if err != nil {
		st.CancelRead(0)
	}
	return ex, proto.OrCanceled(ctx, err)
}
