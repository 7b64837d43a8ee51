package proto

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// PipelinedPublisher publishes one message per connection and writes the
// PUBLISH right behind the CONNECT, before the CONNACK comes back, as MQTT
// allows (3.1.1, section 3.1.4: "Clients are allowed to send further
// Control Packets immediately after sending a CONNECT Packet"). Over QUIC
// with 0-RTT both then travel as early data. Neither Paho client does this
// (each waits for the CONNACK), so the packets are Paho's (the
// paho.mqtt.golang packet codec) and the order is tlab's: MQTT 3.1.1, QoS 0.
type PipelinedPublisher interface {
	// ConnectAndPublish opens a connection, writes CONNECT and PUBLISH in
	// one write, and waits for the CONNACK, which must accept.
	ConnectAndPublish(ctx context.Context, topic string, payload []byte) (ConnSetup, error)
	// Disconnect sends DISCONNECT and closes the connection.
	Disconnect() error
	Connections() int
}

// Pipeliner is a PubSub stack that can pipeline (the MQTT protocols).
type Pipeliner interface {
	NewPipelinedPublisher(n Net, addr string, s Settings, o PubSubOptions) (PipelinedPublisher, error)
}

// ErrPipelineVersion refuses pipelining over MQTT 5.0.
var ErrPipelineVersion = errors.New("pipelined publishing is implemented for MQTT 3.1.1 (settings.mqtt_version 3.1.1)")

// NewPipelinedPublisher makes a pipelined publisher in host n for the
// broker at addr, keeping its TLS session cache across connections.
func (m mqttProto) NewPipelinedPublisher(n Net, addr string, s Settings, o PubSubOptions) (PipelinedPublisher, error) {
	if s.MQTTVersion != "3.1.1" {
		return nil, ErrPipelineVersion
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 60 * time.Second
	}
	return &pipelined{d: m.newDialer(n, addr, s), o: o}, nil
}

type pipelined struct {
	d    *mqttDialer
	o    PubSubOptions
	conn net.Conn
}

func (p *pipelined) ConnectAndPublish(ctx context.Context, topic string, payload []byte) (ConnSetup, error) {
	ctx, cancel := withConnectTimeout(ctx)
	defer cancel()
	setup := ConnSetup{Start: time.Now()}
	conn, finish, err := p.d.dial(ctx, &setup)
	if err != nil {
		return setup, fmt.Errorf("connect: %w", err)
	}
	p.conn = conn
	cp := packets.NewControlPacket(packets.Connect).(*packets.ConnectPacket)
	cp.ProtocolName, cp.ProtocolVersion, cp.CleanSession = "MQTT", 4, true
	cp.ClientIdentifier, cp.Keepalive = p.o.ClientID, uint16(p.o.KeepAlive/time.Second)
	pp := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	pp.TopicName, pp.Qos, pp.Payload = topic, 0, payload
	var b bytes.Buffer
	if err := errors.Join(cp.Write(&b), pp.Write(&b)); err != nil {
		return setup, err
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
		defer conn.SetDeadline(time.Time{})
	}
	ready := time.Now()
	if _, err := conn.Write(b.Bytes()); err != nil {
		return setup, fmt.Errorf("connect and publish: %w", orCanceled(ctx, err))
	}
	pkt, err := packets.ReadPacket(conn)
	if err != nil {
		return setup, fmt.Errorf("waiting for CONNACK: %w", orCanceled(ctx, err))
	}
	ack, ok := pkt.(*packets.ConnackPacket)
	if !ok {
		return setup, fmt.Errorf("the broker answered CONNECT with %v, not CONNACK", pkt)
	}
	if ack.ReturnCode != packets.Accepted {
		return setup, fmt.Errorf("the broker refused the connection: %s", packets.ConnackReturnCodes[ack.ReturnCode])
	}
	setup.Session = time.Since(ready)
	finish()
	return setup, nil
}

func (p *pipelined) Disconnect() error {
	if p.conn == nil {
		return nil
	}
	d := packets.NewControlPacket(packets.Disconnect)
	werr := d.Write(p.conn)
	err := p.conn.Close()
	p.conn = nil
	if werr != nil && !errors.Is(werr, net.ErrClosed) {
		return errors.Join(werr, err)
	}
	return err
}

func (p *pipelined) Connections() int { return int(p.d.conns.Load()) }
