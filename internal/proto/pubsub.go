package proto

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"time"
)

// PubSub is the publish/subscribe capability (CapPubSub): MQTT over a
// transport, through a broker.
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
	// CheckBroker tells whether the stack can use a broker of kind on
	// this machine, so that a scenario is refused before it runs.
	CheckBroker(kind string) error
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

// ProcessHost is a host that can run a program in its network (the
// testbed's hosts can): Mosquitto runs that way.
type ProcessHost interface {
	// StartProcess starts cmd in the host and returns at once; stop ends
	// it (and waits), done is closed when it has ended by itself or not.
	StartProcess(cmd *exec.Cmd) (stop func() error, done <-chan struct{}, err error)
}
