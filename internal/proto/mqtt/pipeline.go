package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"time"
	"tlab/internal/proto"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// NewPipelinedPublisher makes a pipelined publisher in host n for the
// broker at addr, keeping its TLS session cache across connections.
func (m mqttProto) NewPipelinedPublisher(n proto.Net, addr string, s proto.Settings, o proto.PubSubOptions) (proto.PipelinedPublisher, error) {
	if s.MQTTVersion != "3.1.1" {
		return nil, proto.ErrPipelineVersion
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = 60 * time.Second
	}
	return &pipelined{d: m.newDialer(n, addr, s), o: o}, nil
}

type pipelined struct {
	d    *mqttDialer
	o    proto.PubSubOptions
	conn net.Conn
}

func (p *pipelined) ConnectAndPublish(ctx context.Context, topic string, payload []byte) (proto.ConnSetup, error) {
	ctx, cancel := withConnectTimeout(ctx)
	defer cancel()
	setup := proto.ConnSetup{Start: time.Now()}
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
		return setup, fmt.Errorf("connect and publish: %w", proto.OrCanceled(ctx, err))
	}
	pkt, err := packets.ReadPacket(conn)
	if err != nil {
		return setup, fmt.Errorf("waiting for CONNACK: %w", proto.OrCanceled(ctx, err))
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
