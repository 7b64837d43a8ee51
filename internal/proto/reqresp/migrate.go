package reqresp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"tlab/internal/proto"
)

func init() {
	proto.Register(proto.Registration{Name: "quic-migrate", Doc: "quic from a socket bound to the address of the route in force; after a failed exchange, when the route's address changed, the connection migrates to it (quic-go's AddPath, Probe, Switch); one exchange at a time", Options: []string{"key_exchange", "resumption", "zero_rtt", "quic_stream_window", "quic_stream_window_max", "quic_conn_window", "quic_conn_window_max"}, Impl: quicMigrateProto{}})
}

// migrateConnIDLength is the client's connection ID length: quic-go's
// default for a server.
const migrateConnIDLength = 4

// quicMigrateProto is quic whose client, like a device's, sends from a
// socket bound to one of its addresses (the one the route to the server
// uses when it connects), so that the connection stays on that address's
// link; when an exchange fails and the route's address has changed (a
// handover), it moves the connection to a new socket on the new address
// with QUIC's connection migration (RFC 9000 section 9): a new path,
// probed (PATH_CHALLENGE, PATH_RESPONSE), then switched to. The server is
// quic's.
type quicMigrateProto struct{}

func (quicMigrateProto) Name() string { return "quic-migrate" }

func (quicMigrateProto) Serve(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	return quicProto{}.Serve(n, port, s)
}

// routeSource is the address the host's route to addr sends from now.
func routeSource(ctx context.Context, n proto.Net, addr string) (net.IP, error) {
	c, err := n.DialContext(ctx, &net.Dialer{}, "udp4", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP, nil
}

func (quicMigrateProto) NewClient(ctx context.Context, n proto.Net, addr string, s proto.Settings) (proto.Client, error) {
	t0 := time.Now()
	src, err := routeSource(ctx, n, addr)
	if err != nil {
		return nil, fmt.Errorf("the route to %s: %w", addr, err)
	}
	raddr, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		return nil, err
	}
	udp, err := n.ListenUDP(&net.UDPAddr{IP: src})
	if err != nil {
		return nil, err
	}
	qc, qlogs := proto.QUICConfig(s)
	// Connection IDs of its own (quic.Dial's single-use transport has
	// none): a packet on a new path is told to belong to the connection
	// by its connection ID, not by the socket it came in on.
	tr := &quic.Transport{Conn: udp, ConnectionIDLength: migrateConnIDLength}
	conn, err := tr.Dial(ctx, raddr, proto.QUICTLS(s.ClientTLS(alpnTLab)), qc)
	if err != nil {
		tr.Close()
		udp.Close()
		return nil, err
	}
	c := &migratingClient{n: n, addr: addr, conn: conn, local: src}
	c.closers = proto.CloseAll{func() error { return conn.CloseWithError(0, "done") }, tr.Close, udp.Close, func() error { qlogs.Wait(); return nil }}
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		c.Close()
		return nil, err
	}
	state := conn.ConnectionState()
	c.stream = &streamClient{stream: st, closer: io.NopCloser(nil), setup: proto.Exchange{Handshake: time.Since(t0), Resumed: state.TLS.DidResume}}
	return c, nil
}

// migratingClient runs exchanges over one QUIC stream and migrates the
// connection after a failure when the route's address changed.
type migratingClient struct {
	n      proto.Net
	addr   string
	conn   *quic.Conn
	stream *streamClient

	mu      sync.Mutex
	local   net.IP // the address the connection sends from
	failed  bool   // the last exchange failed
	closers proto.CloseAll
	// Migrations counts the paths switched to.
	migrations int
}

func (c *migratingClient) Multiplexes() bool { return false }
func (c *migratingClient) Connections() int  { return 1 }

func (c *migratingClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The connection first, then its sockets and the paths' transports.
	var errs []error
	for _, f := range c.closers {
		errs = append(errs, f())
	}
	return errors.Join(errs...)
}

// Migrations is how many times the connection moved to a new path.
func (c *migratingClient) Migrations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.migrations
}

func (c *migratingClient) Exchange(ctx context.Context, reqSize, respSize int) (proto.Exchange, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	if c.failed {
		if err := c.migrate(ctx); err != nil {
			return proto.Exchange{Start: start, ConnID: 1}, proto.OrCanceled(ctx, err)
		}
	}
	ex, err := c.stream.Exchange(ctx, reqSize, respSize)
	ex.Start = start // a migration above is part of the exchange
	c.failed = err != nil
	return ex, err
}

// migrate moves the connection to a socket on the route's address when
// it is not the one the connection sends from: a new path, probed, then
// switched to.
func (c *migratingClient) migrate(ctx context.Context) error {
	src, err := routeSource(ctx, c.n, c.addr)
	if err != nil {
		return fmt.Errorf("migrate: the route to %s: %w", c.addr, err)
	}
	if src.Equal(c.local) {
		return nil
	}
	udp, err := c.n.ListenUDP(&net.UDPAddr{IP: src})
	if err != nil {
		return fmt.Errorf("migrate: a socket on %s: %w", src, err)
	}
	tr := &quic.Transport{Conn: udp, ConnectionIDLength: migrateConnIDLength}
	path, err := c.conn.AddPath(tr)
	if err != nil {
		udp.Close()
		return fmt.Errorf("migrate to %s: %w", src, err)
	}
	c.closers = append(c.closers, tr.Close, udp.Close)
	if err := path.Probe(ctx); err != nil {
		return fmt.Errorf("migrate: probing the path from %s: %w", src, err)
	}
	if err := path.Switch(); err != nil {
		return fmt.Errorf("migrate: switching to the path from %s: %w", src, err)
	}
	c.local = src
	c.migrations++
	return nil
}
