package proto

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
	register("mqtt-tcp", func() Protocol { return mqttProto{transport: mqttTCP} }, "tcp_congestion", "mqtt_version")
	register("mqtt-tls", func() Protocol { return mqttProto{transport: mqttTLS} }, "tls_version", "key_exchange", "resumption", "tcp_congestion", "mqtt_version")
	register("mqtt-quic", func() Protocol { return mqttProto{transport: mqttQUIC} }, "key_exchange", "resumption", "zero_rtt", "mqtt_version")
}

// MQTT transports.
const (
	mqttTCP  = "tcp"
	mqttTLS  = "tls"
	mqttQUIC = "quic"
)

// ALPNMQTT is the ALPN of MQTT over TLS and QUIC (EMQX, HiveMQ, Mosquitto).
const ALPNMQTT = "mqtt"

// PubSub is a publish/subscribe stack: MQTT over a transport, through a
// broker. The request/response methods of a PubSub protocol fail: it only
// serves the pubsub workload.
type PubSub interface {
	// StartBroker starts a broker of the given kind (BrokerEmbedded or
	// BrokerMosquitto) in host n, listening on port.
	StartBroker(n Net, port int, s Settings, kind string) (io.Closer, error)
	// NewPubSubClient makes a client in host n for the broker at addr
	// ("ip:port"); it connects when Connect is called, and again at each
	// Connect after a Disconnect, keeping its TLS session cache.
	NewPubSubClient(n Net, addr string, s Settings, o PubSubOptions) (PubSubClient, error)
	// DefaultPort is the transport's customary broker port.
	DefaultPort() int
}

// Broker kinds.
const (
	BrokerEmbedded  = "embedded"
	BrokerMosquitto = "mosquitto"
)

// PubSubOptions configure one MQTT client.
type PubSubOptions struct {
	ClientID string
	// KeepAlive is MQTT's keep-alive interval (the broker drops a client
	// silent for 1.5 times as long).
	KeepAlive time.Duration
	// OnMessage is called for each message the client receives, in order,
	// with the time it arrived.
	OnMessage func(topic string, payload []byte, at time.Time)
}

// PubSubClient is one MQTT client.
type PubSubClient interface {
	// Connect opens a transport connection and an MQTT session on it
	// (CONNECT, CONNACK), and says what the set-up cost.
	Connect(ctx context.Context) (ConnSetup, error)
	// Subscribe subscribes to topic (a filter) at qos and waits for the
	// SUBACK.
	Subscribe(ctx context.Context, topic string, qos byte) error
	// Publish sends one message and returns when its QoS flow allows: at
	// once for QoS 0, at the PUBACK for 1, at the PUBCOMP for 2.
	Publish(ctx context.Context, topic string, qos byte, payload []byte) error
	// Disconnect sends DISCONNECT and closes the connection.
	Disconnect() error
	// Connections is the number of transport connections opened so far.
	Connections() int
}

// ConnSetup is what one connection's set-up cost.
type ConnSetup struct {
	// Start is when Connect began; Connect (TCP's handshake), Handshake
	// (TLS or QUIC) and Session (CONNECT to CONNACK) its phases.
	Start                       time.Time
	Connect, Handshake, Session time.Duration
	// Resumed tells whether TLS resumed a session; EarlyData whether QUIC
	// sent 0-RTT data (the CONNECT) and the server accepted it.
	Resumed, EarlyData bool
	// ConnID numbers the client's connections from 1.
	ConnID int
}

type mqttProto struct{ transport string }

func (m mqttProto) Name() string { return "mqtt-" + m.transport }

func (m mqttProto) Serve(Net, int, Settings) (io.Closer, error) { return nil, ErrPubSubOnly }
func (m mqttProto) NewClient(context.Context, Net, string, Settings) (Client, error) {
	return nil, ErrPubSubOnly
}

// ErrPubSubOnly is returned by the request/response methods of MQTT.
var ErrPubSubOnly = errors.New("MQTT only publishes and subscribes (workload pubsub)")

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

// IsPubSub tells whether the named protocol is a PubSub stack.
func IsPubSub(name string) bool {
	f, ok := constructors[name]
	if !ok {
		return false
	}
	_, is := f().(PubSub)
	return is
}

// Exchanges tells whether the named protocol carries request/response
// exchanges (Protocol.Serve and NewClient work): not one that only carries
// frames, nor MQTT, which only publishes and subscribes.
func Exchanges(name string) bool { return !FramesOnly(name) && !IsPubSub(name) }

// listen opens the transport's listener; every accepted net.Conn carries
// one client's MQTT byte stream.
func (m mqttProto) listen(n Net, port int, s Settings) (net.Listener, error) {
	switch m.transport {
	case mqttTCP:
		return listenTCP(n, port, s)
	case mqttTLS:
		ln, err := listenTCP(n, port, s)
		if err != nil {
			return nil, err
		}
		return tls.NewListener(ln, s.serverTLS(ALPNMQTT)), nil
	default:
		return listenQUICStreams(n, port, s)
	}
}

// mqttDialer opens one client's successive connections, keeping the TLS
// session cache (and QUIC's address tokens) between them.
type mqttDialer struct {
	proto mqttProto
	n     Net
	addr  string
	s     Settings
	tls   *tls.Config
	qconf *quic.Config
	qlogs *qlogFiles
	conns atomic.Int32
}

func (m mqttProto) newDialer(n Net, addr string, s Settings) *mqttDialer {
	d := &mqttDialer{proto: m, n: n, addr: addr, s: s}
	switch m.transport {
	case mqttTLS:
		d.tls = s.clientTLS(ALPNMQTT)
	case mqttQUIC:
		d.tls = quicTLS(s.clientTLS(ALPNMQTT))
		d.qconf, d.qlogs = quicConfig(s)
		d.qconf.TokenStore = quic.NewLRUTokenStore(4, 4)
	}
	return d
}

// dial opens a connection. For QUIC it returns as soon as the stream is
// open, before the handshake ends when 0-RTT is possible; finish then
// waits for the handshake and fills in its phase and whether 0-RTT and
// resumption happened.
func (d *mqttDialer) dial(ctx context.Context, setup *ConnSetup) (c net.Conn, finish func(), err error) {
	setup.ConnID = int(d.conns.Add(1))
	switch d.proto.transport {
	case mqttTCP:
		c, setup.Connect, err = dialTCP(ctx, d.n, d.addr, d.s)
		return c, func() {}, err
	case mqttTLS:
		raw, connect, err := dialTCP(ctx, d.n, d.addr, d.s)
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
	conn, udp, err := dialQUIC(ctx, d.n, d.addr, d.tls, d.qconf, d.s.ZeroRTT)
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
	qlogs *qlogFiles
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
	qlogs  *qlogFiles
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	closed error
}

func listenQUICStreams(n Net, port int, s Settings) (net.Listener, error) {
	ln, udp, qlogs, err := listenEarly(n, port, s, ALPNMQTT)
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
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
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
		l.udp.Close()
		l.wg.Wait()
		l.qlogs.Wait()
	})
	return l.closed
}

func (l *quicStreamListener) Addr() net.Addr { return l.udp.LocalAddr() }

// hostPort joins an address and a port.
func hostPort(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }
