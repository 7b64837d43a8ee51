package mqtt

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"tlab/internal/proto"

	"github.com/quic-go/quic-go"
)

// MQTT over three transports, as deployed brokers speak it:
//
//   - mqtt-tcp: MQTT's byte stream on a TCP connection (port 1883);
//   - mqtt-tls: the same inside TLS (1.3 by default, 1.2 selectable; 8883);
//   - mqtt-quic: the same on one client-initiated bidirectional QUIC stream
//     per connection, ALPN "mqtt", port 14567 (EMQX's convention), so that
//     tlab can be pointed at such a broker. The client dials early with a
//     session cache: a reconnect sends its CONNECT as 0-RTT data.
//
// The broker is real (mochi-mqtt embedded behind tlab's listeners, or
// Mosquitto started in the broker's host) and so are the clients (Eclipse
// Paho's Go libraries, 3.1.1 and 5.0), which run over the net.Conn that the
// transport gives them.
func init() {
	proto.Register(proto.Registration{Name: "mqtt-tcp", Doc: "MQTT (3.1.1, or 5.0 with settings.mqtt_version) over TCP, port 1883: Eclipse Paho clients, a mochi-mqtt or Mosquitto broker", Options: []string{"tcp_congestion", "tcp_ecn", "mqtt_version"}, Impl: mqttProto{transport: mqttTCP}})
	proto.Register(proto.Registration{Name: "mqtt-tls", Doc: "MQTT over TLS 1.3 (or 1.2), ALPN mqtt, port 8883", Options: []string{"tls_version", "key_exchange", "resumption", "tcp_congestion", "tcp_ecn", "mqtt_version"}, Impl: mqttProto{transport: mqttTLS}})
	proto.Register(proto.Registration{Name: "mqtt-quic", Doc: "MQTT on one client-initiated bidirectional QUIC stream per connection, ALPN mqtt, port 14567 (EMQX's mapping); a reconnect sends its CONNECT as 0-RTT data with settings.zero_rtt", Options: []string{"key_exchange", "resumption", "zero_rtt", "mqtt_version"}, Impl: mqttProto{transport: mqttQUIC}})
}

// MQTT transports.
const (
	mqttTCP  = "tcp"
	mqttTLS  = "tls"
	mqttQUIC = "quic"
)

// ALPNMQTT is the ALPN of MQTT over TLS and QUIC (EMQX, HiveMQ, Mosquitto).
const ALPNMQTT = "mqtt"

type mqttProto struct{ transport string }

func (m mqttProto) Name() string { return "mqtt-" + m.transport }

// DefaultPort is the customary broker port of the transport.
func (m mqttProto) DefaultPort() int {
	switch m.transport {
	case mqttTLS:
		return 8883
	case mqttQUIC:
		return 14567
	}
	return 1883
}

// listen opens the transport's listener; every accepted net.Conn carries
// one client's MQTT byte stream.
func (m mqttProto) listen(n proto.Net, port int, s proto.Settings) (net.Listener, error) {
	switch m.transport {
	case mqttTCP:
		return proto.ListenTCP(n, port, s)
	case mqttTLS:
		ln, err := proto.ListenTCP(n, port, s)
		if err != nil {
			return nil, err
		}
		return tls.NewListener(ln, s.ServerTLS(ALPNMQTT)), nil
	default:
		return listenQUICStreams(n, port, s)
	}
}

// mqttDialer opens one client's successive connections, keeping the TLS
// session cache (and QUIC's address tokens) between them.
type mqttDialer struct {
	proto mqttProto
	n     proto.Net
	addr  string
	s     proto.Settings
	tls   *tls.Config
	qconf *quic.Config
	qlogs *proto.QlogFiles
	conns atomic.Int32
}

func (m mqttProto) newDialer(n proto.Net, addr string, s proto.Settings) *mqttDialer {
	d := &mqttDialer{proto: m, n: n, addr: addr, s: s}
	switch m.transport {
	case mqttTLS:
		d.tls = s.ClientTLS(ALPNMQTT)
	case mqttQUIC:
		d.tls = proto.QUICTLS(s.ClientTLS(ALPNMQTT))
		d.qconf, d.qlogs = proto.QUICConfig(s)
		d.qconf.TokenStore = quic.NewLRUTokenStore(4, 4)
	}
	return d
}

// dial opens a connection. For QUIC it returns as soon as the stream is
// open, before the handshake ends when 0-RTT is possible; finish then
// waits for the handshake and fills in its phase and whether 0-RTT and
// resumption happened.
func (d *mqttDialer) dial(ctx context.Context, setup *proto.ConnSetup) (c net.Conn, finish func(), err error) {
	setup.ConnID = int(d.conns.Add(1))
	switch d.proto.transport {
	case mqttTCP:
		c, setup.Connect, err = proto.DialTCP(ctx, d.n, d.addr, d.s)
		return c, func() {}, err
	case mqttTLS:
		raw, connect, err := proto.DialTCP(ctx, d.n, d.addr, d.s)
		setup.Connect = connect
		if err != nil {
			return nil, nil, err
		}
		tc := tls.Client(raw, d.tls)
		t0 := time.Now()
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, nil, fmt.Errorf("tls handshake: %w", err)
		}
		setup.Handshake, setup.Resumed = time.Since(t0), tc.ConnectionState().DidResume
		return tc, func() {}, nil
	}
	t0 := time.Now()
	conn, udp, err := proto.DialQUIC(ctx, d.n, d.addr, d.tls, d.qconf, d.s.ZeroRTT)
	if err != nil {
		return nil, nil, err
	}
	// The CONNECT is written as soon as the stream is open: quic-go shows
	// a stream to the peer only when data arrives on it.
	st, err := conn.OpenStream()
	if err != nil {
		conn.CloseWithError(0, "")
		udp.Close()
		return nil, nil, fmt.Errorf("open stream: %w", err)
	}
	handshake := make(chan time.Duration, 1)
	go func() {
		select {
		case <-conn.HandshakeComplete():
			handshake <- time.Since(t0)
		case <-conn.Context().Done():
			handshake <- -1
		}
	}()
	finish = func() {
		if h := <-handshake; h >= 0 {
			setup.Handshake = h
			cs := conn.ConnectionState()
			setup.Resumed, setup.EarlyData = cs.TLS.DidResume, cs.Used0RTT
		}
	}
	return &quicStreamConn{Stream: st, conn: conn, udp: udp, qlogs: d.qlogs}, finish, nil
}

// quicStreamConn is one bidirectional stream as a net.Conn; closing it
// closes its connection (one stream per connection).
type quicStreamConn struct {
	*quic.Stream
	conn  *quic.Conn
	udp   *net.UDPConn // the client's own socket; nil on the server
	qlogs *proto.QlogFiles
	once  sync.Once
}

func (q *quicStreamConn) LocalAddr() net.Addr  { return q.conn.LocalAddr() }
func (q *quicStreamConn) RemoteAddr() net.Addr { return q.conn.RemoteAddr() }

// Close closes the stream and then its connection, gracefully: the
// stream's last bytes (a DISCONNECT) are sent before CONNECTION_CLOSE only
// if the peer had them; MQTT's DISCONNECT is advisory, so this is what a
// broker sees from a real client too.
func (q *quicStreamConn) Close() error {
	var err error
	q.once.Do(func() {
		err = q.Stream.Close()
		q.conn.CloseWithError(0, "")
		if q.udp != nil {
			q.udp.Close()
			q.qlogs.Wait()
		}
	})
	return err
}

// quicStreamListener accepts QUIC connections on an early listener (0-RTT
// allowed when the settings allow it) and hands out each connection's
// first bidirectional stream as a net.Conn.
type quicStreamListener struct {
	ln     *quic.EarlyListener
	udp    *net.UDPConn
	qlogs  *proto.QlogFiles
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	closed error
	// waiting are the connections accepted and not yet handed out (their
	// first stream still to come): Close ends them, or one whose client
	// vanished (its CONNECTION_CLOSE lost) would hold it until the 10 s
	// keep-alive. A connection handed out is the broker's to close.
	waiting proto.QUICConns
}

func listenQUICStreams(n proto.Net, port int, s proto.Settings) (net.Listener, error) {
	ln, udp, qlogs, err := proto.ListenEarly(n, port, s, ALPNMQTT)
	if err != nil {
		return nil, err
	}
	l := &quicStreamListener{ln: ln, udp: udp, qlogs: qlogs, conns: make(chan net.Conn), done: make(chan struct{})}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func (l *quicStreamListener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept(context.Background())
		if err != nil {
			return
		}
		if !l.waiting.Add(c) {
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer l.waiting.Remove(c)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			st, err := c.AcceptStream(ctx)
			cancel()
			if err != nil {
				c.CloseWithError(0, "no stream")
				return
			}
			select {
			case l.conns <- &quicStreamConn{Stream: st, conn: c}:
			case <-l.done:
				c.CloseWithError(0, "")
			}
		}()
	}
}

func (l *quicStreamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *quicStreamListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.closed = l.ln.Close()
		l.waiting.CloseAll()
		l.udp.Close()
		l.wg.Wait()
		l.qlogs.Wait()
	})
	return l.closed
}

func (l *quicStreamListener) Addr() net.Addr { return l.udp.LocalAddr() }
