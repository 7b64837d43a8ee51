package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"
	"tlab/internal/proto"

	"github.com/eclipse/paho.golang/packets"
	paho5 "github.com/eclipse/paho.golang/paho"
	paho3 "github.com/eclipse/paho.mqtt.golang"
)

// NewPubSubClient makes an Eclipse Paho client for the settings' MQTT
// version: paho.mqtt.golang for 3.1.1, paho.golang for 5.0. Both run over
// the transport's net.Conn, so that TCP, TLS and QUIC carry the same
// client.
func (m mqttProto) NewPubSubClient(n proto.Net, addr string, s proto.Settings, o proto.PubSubOptions) (proto.PubSubClient, error) {
	if o.ClientID == "" {
		return nil, errors.New("mqtt client: no client id")
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 60 * time.Second
	}
	d := m.newDialer(n, addr, s)
	if s.MQTTVersion == "5.0" {
		return &paho5Client{d: d, o: o}, nil
	}
	return newPaho3Client(d, o), nil
}

// connectTimeout bounds one connection's set-up when the context has no
// deadline: a satellite link's handshakes with losses take seconds.
const connectTimeout = 60 * time.Second

// paho3Client is MQTT 3.1.1 through paho.mqtt.golang. Paho opens each
// connection through CustomOpenConnectionFn, which has no context: the
// context and the set-up record of the Connect in progress are handed to it
// through the struct.
type paho3Client struct {
	d *mqttDialer
	o proto.PubSubOptions
	c paho3.Client

	// The connection paho opens runs in paho's goroutine, which may
	// outlive a Connect that gave up (its context done): it fills a setup
	// of its own (dialed), which Connect copies only once paho says the
	// connection is up.
	mu      sync.Mutex
	ctx     context.Context
	start   time.Time
	dialed  *proto.ConnSetup
	finish  func()
	readyAt time.Time
}

func newPaho3Client(d *mqttDialer, o proto.PubSubOptions) *paho3Client {
	p := &paho3Client{d: d, o: o}
	opts := paho3.NewClientOptions().
		AddBroker("tcp://" + d.addr). // the scheme is ignored: the connection is ours
		SetClientID(o.ClientID).
		SetProtocolVersion(4).
		SetCleanSession(true).
		SetKeepAlive(o.KeepAlive).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetConnectTimeout(connectTimeout).
		SetOrderMatters(true).
		SetCustomOpenConnectionFn(func(*url.URL, paho3.ClientOptions) (net.Conn, error) {
			p.mu.Lock()
			ctx, setup := p.ctx, &proto.ConnSetup{Start: p.start}
			p.mu.Unlock()
			c, finish, err := p.d.dial(ctx, setup)
			if err != nil {
				return nil, err
			}
			p.mu.Lock()
			p.dialed, p.finish, p.readyAt = setup, finish, time.Now()
			p.mu.Unlock()
			return c, nil
		})
	p.c = paho3.NewClient(opts)
	return p
}

func (p *paho3Client) Connect(ctx context.Context) (proto.ConnSetup, error) {
	start := time.Now()
	p.mu.Lock()
	p.ctx, p.start, p.dialed, p.finish = ctx, start, nil, nil
	p.mu.Unlock()
	if err := waitToken(ctx, p.c.Connect()); err != nil {
		return proto.ConnSetup{Start: start}, fmt.Errorf("connect: %w", err)
	}
	p.mu.Lock()
	dialed, finish, ready := p.dialed, p.finish, p.readyAt
	p.mu.Unlock()
	if dialed == nil {
		return proto.ConnSetup{Start: start}, errors.New("connect: paho reported a connection tlab did not open")
	}
	dialed.Session = time.Since(ready)
	if finish != nil {
		finish()
	}
	return *dialed, nil
}

func (p *paho3Client) Subscribe(ctx context.Context, topic string, qos byte) error {
	return waitToken(ctx, p.c.Subscribe(topic, qos, func(_ paho3.Client, m paho3.Message) {
		at := time.Now()
		if p.o.OnMessage != nil {
			p.o.OnMessage(m.Topic(), m.Payload(), at)
		}
	}))
}

func (p *paho3Client) Publish(ctx context.Context, topic string, qos byte, payload []byte) error {
	return waitToken(ctx, p.c.Publish(topic, qos, false, payload))
}

func (p *paho3Client) Disconnect() error {
	if p.c.IsConnectionOpen() {
		p.c.Disconnect(100)
	}
	return nil
}

func (p *paho3Client) Connections() int { return int(p.d.conns.Load()) }

// waitToken waits for a Paho token, or for the context to end.
func waitToken(ctx context.Context, t paho3.Token) error {
	select {
	case <-t.Done():
		return t.Error()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// paho5Client is MQTT 5.0 through paho.golang, which takes a connected
// net.Conn: each Connect makes a new paho client on a new connection.
type paho5Client struct {
	d *mqttDialer
	o proto.PubSubOptions

	mu   sync.Mutex
	c    *paho5.Client
	conn net.Conn
}

// withConnectTimeout bounds a connection's set-up when ctx has no deadline.
func withConnectTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, connectTimeout)
}

func (p *paho5Client) Connect(ctx context.Context) (proto.ConnSetup, error) {
	ctx, cancel := withConnectTimeout(ctx)
	defer cancel()
	setup := proto.ConnSetup{Start: time.Now()}
	conn, finish, err := p.d.dial(ctx, &setup)
	if err != nil {
		return setup, fmt.Errorf("connect: %w", err)
	}
	ready := time.Now()
	c := paho5.NewClient(paho5.ClientConfig{
		ClientID: p.o.ClientID,
		Conn:     packets.NewThreadSafeConn(conn),
		OnPublishReceived: []func(paho5.PublishReceived) (bool, error){func(r paho5.PublishReceived) (bool, error) {
			at := time.Now()
			if p.o.OnMessage != nil {
				p.o.OnMessage(r.Packet.Topic, r.Packet.Payload, at)
			}
			return true, nil
		}},
	})
	ack, err := c.Connect(ctx, &paho5.Connect{ClientID: p.o.ClientID, KeepAlive: uint16(p.o.KeepAlive / time.Second), CleanStart: true})
	if err != nil {
		conn.Close()
		if ack != nil {
			return setup, fmt.Errorf("connect: refused, reason %d (%s): %w", ack.ReasonCode, ack.Properties.ReasonString, err)
		}
		return setup, fmt.Errorf("connect: %w", err)
	}
	setup.Session = time.Since(ready)
	finish()
	p.mu.Lock()
	p.c, p.conn = c, conn
	p.mu.Unlock()
	return setup, nil
}

func (p *paho5Client) client() (*paho5.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return nil, errors.New("not connected")
	}
	return p.c, nil
}

func (p *paho5Client) Subscribe(ctx context.Context, topic string, qos byte) error {
	c, err := p.client()
	if err != nil {
		return err
	}
	ack, err := c.Subscribe(ctx, &paho5.Subscribe{Subscriptions: []paho5.SubscribeOptions{{Topic: topic, QoS: qos}}})
	if err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	if len(ack.Reasons) > 0 && ack.Reasons[0] >= 0x80 {
		return fmt.Errorf("subscribe %s: refused, reason %d", topic, ack.Reasons[0])
	}
	return nil
}

func (p *paho5Client) Publish(ctx context.Context, topic string, qos byte, payload []byte) error {
	c, err := p.client()
	if err != nil {
		return err
	}
	if _, err := c.Publish(ctx, &paho5.Publish{Topic: topic, QoS: qos, Payload: payload}); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

func (p *paho5Client) Disconnect() error {
	p.mu.Lock()
	c, conn := p.c, p.conn
	p.c, p.conn = nil, nil
	p.mu.Unlock()
	if c == nil {
		return nil
	}
	err := c.Disconnect(&paho5.Disconnect{ReasonCode: 0})
	conn.Close()
	return err
}

func (p *paho5Client) Connections() int { return int(p.d.conns.Load()) }
