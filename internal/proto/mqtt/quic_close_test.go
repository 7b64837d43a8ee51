package mqtt

import (
	"context"
	"io"
	"testing"
	"time"
	"tlab/internal/proto"
	"tlab/internal/proto/quictest"
)

// connectPacket is an MQTT 3.1.1 CONNECT (OASIS MQTT 3.1.1, section 3.1):
// fixed header 0x10 with remaining length 13; protocol name "MQTT"
// (length 4), level 4, flags 0x02 (clean session), keep-alive 60 s;
// client identifier "a" (length 1). 13 = 2+4 + 1 + 1 + 2 + 2+1.
var connectPacket = []byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 60, 0, 1, 'a'}

// connackLen is a 3.1.1 CONNACK's length: fixed header (0x20, remaining
// length 2), acknowledge flags and return code (section 3.2).
const connackLen = 4

// TestMQTTQUICBrokerCloseEndsAConnectionWhoseClientVanished: a client
// whose CONNECTION_CLOSE is lost (dropped behind a full emulated queue)
// must not hold the mqtt-quic broker's Close until its connection's
// keep-alive (10 s) or idle timeout (30 s), neither once it is a
// connected MQTT client nor before it opened its stream: quic-go's closed
// listener leaves the connections it accepted alive.
func TestMQTTQUICBrokerCloseEndsAConnectionWhoseClientVanished(t *testing.T) {
	s := quictest.Settings(t)
	for _, tc := range []struct {
		name string
		// open does what the client does before it vanishes.
		open func(context.Context, *quictest.Client) error
	}{
		{"connected", func(ctx context.Context, c *quictest.Client) error {
			st, err := c.OpenStreamSync(ctx)
			if err != nil {
				return err
			}
			if _, err := st.Write(connectPacket); err != nil {
				return err
			}
			_, err = io.ReadFull(st, make([]byte, connackLen))
			return err
		}},
		{"before its stream", func(context.Context, *quictest.Client) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port, err := quictest.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			broker, err := mqttProto{transport: mqttQUIC}.StartBroker(proto.LocalNet{}, port, s, proto.BrokerEmbedded)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			qc, _ := proto.QUICConfig(s)
			conn, err := quictest.Dial(ctx, port, proto.QUICTLS(s.ClientTLS(ALPNMQTT)), qc)
			if err != nil {
				broker.Close()
				t.Fatal(err)
			}
			defer conn.Release()
			if err := tc.open(ctx, conn); err != nil {
				broker.Close()
				t.Fatal(err)
			}
			conn.Vanish()
			quictest.RequirePromptClose(t, broker, "broker")
		})
	}
}
