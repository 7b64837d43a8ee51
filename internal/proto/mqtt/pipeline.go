package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"time"
	"tlab/internal/proto"
	"unicode/utf8"

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
	b, err := connectAndPublishBytes(p.o.ClientID, p.o.KeepAlive, topic, payload)
	if err != nil {
		return setup, err
	}
	if d, ok := ctx.Deadline(); ok {
		conn.SetDeadline(d)
		defer conn.SetDeadline(time.Time{})
	}
	ready := time.Now()
	if _, err := conn.Write(b); err != nil {
		return setup, fmt.Errorf("connect and publish: %w", proto.OrCanceled(ctx, err))
	}
	if err := readConnack(conn); err != nil {
		return setup, proto.OrCanceled(ctx, err)
	}
	setup.Session = time.Since(ready)
	finish()
	return setup, nil
}

// MQTT 3.1.1's bounds on what one packet may hold (sections 1.5.3 and
// 2.2.3): paho's encoder would silently truncate a longer string, and
// the publish would go out under another topic.
const (
	maxMQTTString    = 65535
	maxRemainingSize = 268435455
)

// connectAndPublishBytes encodes a CONNECT and a QoS 0 PUBLISH, back to
// back, as one write; it refuses what MQTT 3.1.1 cannot carry rather
// than send something else.
func connectAndPublishBytes(clientID string, keepAlive time.Duration, topic string, payload []byte) ([]byte, error) {
	switch {
	case len(clientID) > maxMQTTString:
		return nil, fmt.Errorf("client id of %d bytes: MQTT allows %d", len(clientID), maxMQTTString)
	case len(topic) == 0 || len(topic) > maxMQTTString:
		return nil, fmt.Errorf("topic of %d bytes: MQTT allows 1 to %d", len(topic), maxMQTTString)
	case !utf8.ValidString(topic) || strings.ContainsAny(topic, "#+\x00"):
		return nil, fmt.Errorf("topic %q: a PUBLISH topic is UTF-8 without wildcards or NUL", topic)
	case 2+len(topic)+len(payload) > maxRemainingSize:
		return nil, fmt.Errorf("payload of %d bytes: an MQTT packet holds at most %d", len(payload), maxRemainingSize)
	case keepAlive < 0 || keepAlive/time.Second > math.MaxUint16:
		return nil, fmt.Errorf("keep-alive %v: MQTT allows 0 to %d s", keepAlive, math.MaxUint16)
	}
	cp := packets.NewControlPacket(packets.Connect).(*packets.ConnectPacket)
	cp.ProtocolName, cp.ProtocolVersion, cp.CleanSession = "MQTT", 4, true
	cp.ClientIdentifier, cp.Keepalive = clientID, uint16(keepAlive/time.Second)
	pp := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	pp.TopicName, pp.Qos, pp.Payload = topic, 0, payload
	var b bytes.Buffer
	if err := errors.Join(cp.Write(&b), pp.Write(&b)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readConnack reads the broker's answer to CONNECT: nil when it is a
// CONNACK that accepts the connection. A CONNACK is four bytes (MQTT
// 3.1.1, 3.2); the answer is read within that bound, never by the length
// the peer claims (paho's reader allocates whatever that says).
func readConnack(r io.Reader) error {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return fmt.Errorf("waiting for CONNACK: %w", err)
	}
	if kind := b[0] >> 4; b[0] != packets.Connack<<4 || b[1] != 2 {
		name, known := packets.PacketNames[kind]
		if !known {
			name = fmt.Sprintf("packet type %d", kind)
		}
		return fmt.Errorf("the broker answered CONNECT with %s (header %#02x %#02x), not a CONNACK", name, b[0], b[1])
	}
	if b[2]&^1 != 0 {
		return fmt.Errorf("CONNACK with reserved flags %#02x", b[2])
	}
	if rc := b[3]; rc != packets.Accepted {
		reason, known := packets.ConnackReturnCodes[rc]
		if !known {
			reason = fmt.Sprintf("return code %d", rc)
		}
		return fmt.Errorf("the broker refused the connection: %s", reason)
	}
	return nil
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
