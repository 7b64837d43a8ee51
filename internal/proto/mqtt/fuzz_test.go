package mqtt

import (
	"bytes"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// FuzzPipelinedPackets: whatever client id, topic and payload a scenario
// gives the pipelined publisher, it either refuses them or writes a
// CONNECT and a PUBLISH that an independent reader (paho's) reads back as
// given, nothing more; and whatever a broker answers is read without a
// panic, accepted only when it is a CONNACK with return code 0.
func FuzzPipelinedPackets(f *testing.F) {
	f.Add("tlab-pub-0", uint16(60), "tlab/sensor/1", []byte("x"), []byte{0x20, 0x02, 0x00, 0x00})
	f.Add("", uint16(0), "a/b", []byte{}, []byte{0x20, 0x02, 0x00, 0x05})
	f.Add("c", uint16(1), "t", make([]byte, 300), []byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, clientID string, keepAlive uint16, topic string, payload, answer []byte) {
		b, err := connectAndPublishBytes(clientID, time.Duration(keepAlive)*time.Second, topic, payload)
		if err == nil {
			r := bytes.NewReader(b)
			cp, err1 := packets.ReadPacket(r)
			pp, err2 := packets.ReadPacket(r)
			if err1 != nil || err2 != nil {
				t.Fatalf("what the publisher writes does not read back: %v, %v", err1, err2)
			}
			c, ok1 := cp.(*packets.ConnectPacket)
			p, ok2 := pp.(*packets.PublishPacket)
			if !ok1 || !ok2 || c.ClientIdentifier != clientID || c.Keepalive != keepAlive || p.TopicName != topic || !bytes.Equal(p.Payload, payload) || p.Qos != 0 || r.Len() != 0 {
				t.Fatalf("wrote client %q, keep-alive %d, topic %q, %d bytes; read %+v and %+v with %d bytes left", clientID, keepAlive, topic, len(payload), cp, pp, r.Len())
			}
		}
		if err := readConnack(bytes.NewReader(answer)); err == nil {
			ack, ok := mustRead(answer).(*packets.ConnackPacket)
			if !ok || ack.ReturnCode != packets.Accepted {
				t.Fatalf("accepted %x as a CONNACK that accepts", answer)
			}
		}
	})
}

func mustRead(b []byte) packets.ControlPacket {
	p, _ := packets.ReadPacket(bytes.NewReader(b))
	return p
}
