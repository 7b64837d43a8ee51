// Package quictest holds what the QUIC servers' loopback tests share: a
// client that can vanish without a word (its CONNECTION_CLOSE lost, as
// behind a full emulated queue) and a timer on a server's Close. Only
// tests import it.
package quictest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
	"tlab/internal/pki"
	"tlab/internal/proto"

	"github.com/quic-go/quic-go"
)

// Loopback is the address the tests serve and dial on.
var Loopback = net.IPv4(127, 0, 0, 1)

// FreePort is a UDP port on loopback that was free a moment ago.
func FreePort() (int, error) {
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: Loopback})
	if err != nil {
		return 0, fmt.Errorf("a free UDP port: %w", err)
	}
	defer probe.Close()
	return probe.LocalAddr().(*net.UDPAddr).Port, nil
}

// mutableConn is a client's socket that drops what it sends once muted.
// A plain net.PacketConn (not the UDPConn itself, whose batch writes
// quic-go would use instead of WriteTo).
type mutableConn struct {
	net.PacketConn
	mute atomic.Bool
}

func (c *mutableConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c.mute.Load() {
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, addr)
}

// Client is a QUIC connection to a loopback server whose sends can be
// silenced.
type Client struct {
	*quic.Conn
	sock *mutableConn
}

// Dial connects to the server on loopback port.
func Dial(ctx context.Context, port int, tlsConf *tls.Config, qc *quic.Config) (*Client, error) {
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: Loopback})
	if err != nil {
		return nil, fmt.Errorf("the client's socket: %w", err)
	}
	sock := &mutableConn{PacketConn: udp}
	conn, err := quic.Dial(ctx, sock, &net.UDPAddr{IP: Loopback, Port: port}, tlsConf, qc)
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("dial port %d: %w", port, err)
	}
	return &Client{Conn: conn, sock: sock}, nil
}

// Vanish closes the connection with its CONNECTION_CLOSE lost: the socket
// stays open, so nothing else (no ICMP) tells the server. It waits first
// until both ends are idle, every packet acknowledged, so that the
// server's connection has nothing to send (a write on a closed socket
// would end it and hide the defect).
func (c *Client) Vanish() {
	time.Sleep(300 * time.Millisecond)
	c.sock.mute.Store(true)
	c.CloseWithError(0, "")
}

// Release closes the client's socket.
func (c *Client) Release() { c.sock.Close() }

// closeTook times srv.Close, waiting at most giveUp for it; finished is
// false when it had not returned by then.
func closeTook(srv io.Closer, giveUp time.Duration) (took time.Duration, finished bool) {
	start := time.Now()
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
		return time.Since(start), true
	case <-time.After(giveUp):
		return time.Since(start), false
	}
}

// Settings are proto's defaults with a fresh certificate for Loopback.
func Settings(t testing.TB) proto.Settings {
	t.Helper()
	certs, err := pki.NewCertificates(Loopback)
	if err != nil {
		t.Fatal(err)
	}
	s := proto.DefaultSettings()
	s.Certs = certs
	return s
}

// RequirePromptClose fails t unless srv's Close returns within 2 s after
// a client vanished: a close is a few local steps, far below the 10 s
// keep-alive that would end the vanished client's connection otherwise.
// what names the server in the messages.
func RequirePromptClose(t testing.TB, srv io.Closer, what string) {
	t.Helper()
	took, finished := closeTook(srv, 20*time.Second)
	if !finished {
		t.Fatalf("the %s's Close waited 20 s for a vanished client's connection", what)
	}
	if took > 2*time.Second {
		t.Errorf("the %s's Close took %v with a vanished client", what, took)
	}
}
