package mqtt

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"tlab/internal/proto"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// StartBroker starts the broker of the given kind in host n on port.
func (m mqttProto) StartBroker(n proto.Net, port int, s proto.Settings, kind string) (io.Closer, error) {
	switch kind {
	case proto.BrokerEmbedded, "":
		return m.startMochi(n, port, s)
	case proto.BrokerMosquitto:
		return m.startMosquitto(n, port, s)
	}
	return nil, fmt.Errorf("broker %q: want %s or %s", kind, proto.BrokerEmbedded, proto.BrokerMosquitto)
}

// CheckBroker tells whether the stack can use a broker of kind on this
// machine, so that a scenario is refused before it runs.
func (m mqttProto) CheckBroker(kind string) error {
	switch kind {
	case proto.BrokerEmbedded, "":
		return nil
	case proto.BrokerMosquitto:
		if m.transport == mqttQUIC {
			return errors.New("mosquitto speaks MQTT over TCP and TLS, not QUIC: use broker embedded for mqtt-quic")
		}
		if _, err := exec.LookPath("mosquitto"); err != nil {
			return errors.New("mosquitto is not installed: apt-get install mosquitto (or scripts/setup --tests)")
		}
		return nil
	}
	return fmt.Errorf("broker %q: want %s or %s", kind, proto.BrokerEmbedded, proto.BrokerMosquitto)
}

// mochiBroker is mochi-mqtt, embedded, behind tlab's own listener.
type mochiBroker struct {
	srv  *mochi.Server
	ln   *trackingListener
	once sync.Once
	err  error
}

// trackingListener remembers the connections it accepted, so that closing
// the broker closes every one of them: mochi's Close waits for its client
// goroutines, and one blocked in a read on a connection mochi no longer
// lists (a client taken over, one still connecting) would wait forever.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.conns[c] = true
	l.mu.Unlock()
	return c, nil
}

func (l *trackingListener) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Close()
	}
	l.conns = map[net.Conn]bool{}
}

func (m mqttProto) startMochi(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	raw, err := m.listen(n, port, s)
	if err != nil {
		return nil, fmt.Errorf("broker listener: %w", err)
	}
	ln := &trackingListener{Listener: raw, conns: map[net.Conn]bool{}}
	srv := mochi.New(&mochi.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		ln.Close()
		return nil, err
	}
	if err := srv.AddListener(listeners.NewNet("tlab-"+m.transport, ln)); err != nil {
		ln.Close()
		return nil, err
	}
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("broker: %w", err)
	}
	return &mochiBroker{srv: srv, ln: ln}, nil
}

// Close stops the broker without meeting mochi's deadlock
// (mochi-mqtt/server#488, unfixed in v2.7.9): its Close reads the client
// list under a read lock taken twice, which deadlocks when a client
// disconnecting asks for the write lock in between. So every connection
// is closed first, Close waits until mochi has forgotten every client, and
// only then closes mochi, within a bound that keeps a sweep from hanging.
func (b *mochiBroker) Close() error {
	b.once.Do(func() {
		b.ln.Close() // no new client from here on
		b.ln.closeAll()
		for deadline := time.Now().Add(3 * time.Second); b.srv.Clients.Len() > 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		done := make(chan error, 1)
		go func() { done <- b.srv.Close() }()
		select {
		case b.err = <-done:
		case <-time.After(5 * time.Second):
			b.err = errors.New("mochi-mqtt did not close within 5 s (its client-list deadlock, mochi-mqtt/server#488); its goroutines are left behind")
		}
	})
	return b.err
}

// mosquittoBroker is Mosquitto started in the broker's host with a
// generated configuration and the run's certificate.
type mosquittoBroker struct {
	stop func() error
	dir  string
	once sync.Once
}

func (m mqttProto) startMosquitto(n proto.Net, port int, s proto.Settings) (io.Closer, error) {
	if err := m.CheckBroker(proto.BrokerMosquitto); err != nil {
		return nil, err
	}
	ph, ok := n.(proto.ProcessHost)
	if !ok {
		return nil, errors.New("mosquitto: this host cannot start programs")
	}
	bin, _ := exec.LookPath("mosquitto")
	dir, err := os.MkdirTemp("", "tlab-mosquitto-")
	if err != nil {
		return nil, err
	}
	conf, err := mosquittoConfig(dir, port, m.transport, s)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	path := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-c", path)
	cmd.Stdout, cmd.Stderr = &out, &out
	stop, done, err := ph.StartProcess(cmd)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mosquitto: %w", err)
	}
	b := &mosquittoBroker{stop: stop, dir: dir}
	// Ready when it accepts a TCP connection on its port.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		c, err := n.DialContext(ctx, nil, "tcp4", proto.HostPort("127.0.0.1", port))
		cancel()
		if err == nil {
			c.Close()
			return b, nil
		}
		select {
		case <-done:
			b.Close()
			return nil, fmt.Errorf("mosquitto exited at start: %s", strings.TrimSpace(out.String()))
		default:
		}
		if time.Now().After(deadline) {
			b.Close()
			return nil, fmt.Errorf("mosquitto did not listen on port %d within 5 s: %s", port, strings.TrimSpace(out.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *mosquittoBroker) Close() error {
	var err error
	b.once.Do(func() {
		err = b.stop()
		os.RemoveAll(b.dir)
	})
	return err
}

// mosquittoConfig writes the certificate files Mosquitto needs into dir and
// returns its configuration. TCP_NODELAY is set as Go's sockets (mochi's
// and Paho's) set it, so that Nagle's algorithm does not hold small
// messages back in one broker and not the other.
func mosquittoConfig(dir string, port int, transport string, s proto.Settings) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by tlab for one cell\nper_listener_settings false\nallow_anonymous true\npersistence false\nuser root\nlog_dest stderr\nlog_type error\nlog_type warning\nset_tcp_nodelay true\nmax_inflight_messages 20\nlistener %d\n", port)
	if transport == mqttTLS {
		if s.Certs == nil {
			return "", errors.New("mosquitto over TLS: no certificates")
		}
		var chain bytes.Buffer
		for _, der := range s.Certs.Server.Certificate {
			pem.Encode(&chain, &pem.Block{Type: "CERTIFICATE", Bytes: der})
		}
		key, err := x509.MarshalPKCS8PrivateKey(s.Certs.Server.PrivateKey)
		if err != nil {
			return "", fmt.Errorf("mosquitto key: %w", err)
		}
		cert, keyFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
		if err := os.WriteFile(cert, chain.Bytes(), 0o600); err != nil {
			return "", err
		}
		if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
			return "", err
		}
		version := "tlsv1.3"
		if s.TLSVersion == "1.2" {
			version = "tlsv1.2"
		}
		fmt.Fprintf(&b, "certfile %s\nkeyfile %s\ntls_version %s\n", cert, keyFile, version)
	}
	return b.String(), nil
}
