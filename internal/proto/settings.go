package proto

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"tlab/internal/pki"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

// SettingNames lists the settings' yaml names, in declaration order.
func SettingNames() []string {
	var names []string
	t := reflect.TypeOf(Settings{})
	for i := 0; i < t.NumField(); i++ {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	return names
}

// DecodeSettings decodes a settings: section strictly on top of the
// defaults, checks the result, and returns the names the section set. An
// empty node gives the defaults.
func DecodeSettings(file string, node *yaml.Node) (Settings, []string, error) {
	s := DefaultSettings()
	if node == nil || node.Kind == 0 {
		return s, nil, nil
	}
	if err := strictyaml.Decode(file, node, &s); err != nil {
		return s, nil, err
	}
	var set []string
	for i := 0; node.Kind == yaml.MappingNode && i+1 < len(node.Content); i += 2 {
		set = append(set, node.Content[i].Value)
	}
	if err := s.Validate(); err != nil {
		return s, set, strictyaml.ErrorAt(file, node, "", "settings: %v", err)
	}
	return s, set, nil
}

// CheckOptions reports a setting that was set but that none of protocols
// honours, so that a setting that would silently change nothing is refused.
func CheckOptions(set, protocols []string) error {
	for _, name := range set {
		var users []string
		for _, p := range Names() {
			if slices.Contains(Options(p), name) {
				users = append(users, p)
			}
		}
		used := false
		for _, p := range protocols {
			used = used || slices.Contains(Options(p), name)
		}
		if !used {
			return fmt.Errorf("settings.%s: none of %s uses it (it applies to %s)", name, strings.Join(protocols, ", "), strings.Join(users, ", "))
		}
	}
	return nil
}

// Settings are the knobs of the protocols. They are explicit and are
// recorded with every result. A scenario's settings: section decodes into
// them directly (DecodeSettings), by the yaml names; each protocol declares
// at registration which of them it honours (Options).
type Settings struct {
	// TLSVersion is "1.3" (default) or "1.2". QUIC always uses 1.3.
	TLSVersion string `json:"tls_version" yaml:"tls_version"`
	// KeyExchange names the TLS key exchange: "x25519" (default, the
	// classic one), "x25519mlkem768" (Go's hybrid post-quantum default,
	// which enlarges the handshake by about 1.1 KB each way) or "p256".
	KeyExchange string `json:"key_exchange" yaml:"key_exchange"`
	// Resumption lets new TLS connections resume a session (TLS tickets,
	// QUIC resumption).
	Resumption bool `json:"resumption" yaml:"resumption"`
	// ZeroRTT lets QUIC send early data on resumed connections.
	ZeroRTT bool `json:"zero_rtt" yaml:"zero_rtt"`
	// Congestion is the TCP congestion control ("cubic" by default); the
	// kernel must offer it.
	Congestion string `json:"tcp_congestion" yaml:"tcp_congestion"`
	// TCPECN has TCP ask for ECN: the kernel's tcp_ecn = 1 on every host
	// of the cell (the default, 2, answers ECN and never asks). quic-go
	// marks its packets ECT(0) on Linux whatever this says.
	TCPECN bool `json:"tcp_ecn" yaml:"tcp_ecn"`
	// IdleTimeout closes a connection of the strict HTTP/1.1 client (and
	// HTTP/2's) idle for this long; the h1_client "transport" keeps
	// net/http's own 90 s, as Go gives it.
	IdleTimeout units.Duration `json:"idle_timeout" yaml:"idle_timeout"`
	// H1Client chooses the HTTP/1.1 client: "strict" (the default, also
	// when empty), tlab's
	// own, which takes the idle connection if there is one and otherwise
	// opens one that the request waits for, keeping MaxIdle idle; or
	// "transport", net/http's Transport with its defaults (two idle
	// connections per host; a request that finds none races a new dial
	// against a busy connection becoming free), as a Go program gets it.
	H1Client string `json:"h1_client" yaml:"h1_client"`
	// MaxIdle is how many idle HTTP/1.1 connections the client keeps: 1
	// (default) is study A's client, with its one persistent connection;
	// a connection that finds the set full is closed at once.
	MaxIdle int `json:"h1_max_idle" yaml:"h1_max_idle"`
	// QUIC receive windows (quic-go's flow control), per stream and per
	// connection: the initial window and the maximum its auto-tuning may
	// reach. An initial window equal to its maximum is a static window.
	// 0 keeps quic-go's defaults (512 KiB growing to 6 MiB per stream,
	// 768 KiB to 15 MiB per connection).
	StreamWindow    units.Size `json:"quic_stream_window,omitempty" yaml:"quic_stream_window"`
	StreamWindowMax units.Size `json:"quic_stream_window_max,omitempty" yaml:"quic_stream_window_max"`
	ConnWindow      units.Size `json:"quic_conn_window,omitempty" yaml:"quic_conn_window"`
	ConnWindowMax   units.Size `json:"quic_conn_window_max,omitempty" yaml:"quic_conn_window_max"`
	// MQTTVersion is the MQTT protocol version: "3.1.1" (default, Eclipse
	// Paho's Go client) or "5.0" (Paho's paho.golang).
	MQTTVersion string `json:"mqtt_version" yaml:"mqtt_version"`

	// KeyLog receives TLS secrets for Wireshark when set.
	KeyLog io.Writer `json:"-" yaml:"-"`
	// ServerLog receives what a server's library logs of its own (a lost
	// TLS handshake); nil discards it. Never the user's terminal.
	ServerLog io.Writer `json:"-" yaml:"-"`
	// Handshakes, when set, records what every client TLS handshake
	// negotiated (ClientTLS's configs report to it).
	Handshakes *Handshakes `json:"-" yaml:"-"`
	// TCP, when set, records what every client TCP connection runs (its
	// congestion control, whether it negotiated ECN): DialTCP reports
	// to it.
	TCP *TCPConns `json:"-" yaml:"-"`
	// QlogDir receives one qlog file per QUIC connection when set.
	QlogDir string `json:"-" yaml:"-"`
	// Certs is the run's PKI; servers need it, clients trust its roots.
	Certs *pki.Certificates `json:"-" yaml:"-"`
}

// HTTP/1.1 clients (Settings.H1Client).
const (
	H1Strict    = "strict"
	H1Transport = "transport"
)

// DefaultSettings are tlab's defaults.
func DefaultSettings() Settings {
	return Settings{TLSVersion: "1.3", KeyExchange: "x25519", Resumption: true, Congestion: "cubic", IdleTimeout: units.Duration(5 * time.Second), H1Client: H1Strict, MaxIdle: 1, MQTTVersion: "3.1.1"}
}

var keyExchanges = map[string]tls.CurveID{
	"x25519":         tls.X25519,
	"x25519mlkem768": tls.X25519MLKEM768,
	"p256":           tls.CurveP256,
}

// Validate checks the settings against what this machine and Go offer.
func (s Settings) Validate() error {
	if s.TLSVersion != "1.3" && s.TLSVersion != "1.2" {
		return fmt.Errorf("tls version %q: want 1.3 or 1.2", s.TLSVersion)
	}
	if _, ok := keyExchanges[s.KeyExchange]; !ok {
		return fmt.Errorf("key exchange %q: want x25519, x25519mlkem768 or p256", s.KeyExchange)
	}
	if s.Congestion != "" {
		avail, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
		if err == nil && !strings.Contains(" "+strings.TrimSpace(string(avail))+" ", " "+s.Congestion+" ") {
			return fmt.Errorf("tcp congestion control %q: this kernel offers %s", s.Congestion, strings.TrimSpace(string(avail)))
		}
	}
	if s.MQTTVersion != "3.1.1" && s.MQTTVersion != "5.0" {
		return fmt.Errorf("mqtt version %q: want 3.1.1 or 5.0", s.MQTTVersion)
	}
	if s.IdleTimeout <= 0 {
		return errors.New("idle timeout must be positive")
	}
	if s.MaxIdle < 1 {
		return errors.New("h1 max idle connections must be at least 1")
	}
	if s.H1Client != "" && s.H1Client != H1Strict && s.H1Client != H1Transport { // "" is strict
		return fmt.Errorf("h1 client %q: want %s or %s", s.H1Client, H1Strict, H1Transport)
	}
	for _, w := range []struct {
		name         string
		initial, max units.Size
	}{{"stream", s.StreamWindow, s.StreamWindowMax}, {"connection", s.ConnWindow, s.ConnWindowMax}} {
		if w.initial < 0 || w.max < 0 {
			return fmt.Errorf("quic %s window must not be negative", w.name)
		}
		if w.initial > 0 && w.max > 0 && w.max < w.initial {
			return fmt.Errorf("quic %s window: maximum %d is below the initial %d", w.name, w.max, w.initial)
		}
	}
	return nil
}

func (s Settings) tlsVersion() uint16 {
	if s.TLSVersion == "1.2" {
		return tls.VersionTLS12
	}
	return tls.VersionTLS13
}

// ServerTLS is the TLS configuration of a server speaking alpn.
func (s Settings) ServerTLS(alpn ...string) *tls.Config {
	return &tls.Config{
		Certificates:           []tls.Certificate{s.Certs.Server},
		MinVersion:             s.tlsVersion(),
		MaxVersion:             s.tlsVersion(),
		CurvePreferences:       []tls.CurveID{keyExchanges[s.KeyExchange]},
		NextProtos:             alpn,
		SessionTicketsDisabled: !s.Resumption,
	}
}

// ClientTLS is the TLS configuration of a client speaking alpn.
func (s Settings) ClientTLS(alpn ...string) *tls.Config {
	c := &tls.Config{
		RootCAs:          s.Certs.Roots,
		ServerName:       "tlab-server",
		MinVersion:       s.tlsVersion(),
		MaxVersion:       s.tlsVersion(),
		CurvePreferences: []tls.CurveID{keyExchanges[s.KeyExchange]},
		NextProtos:       alpn,
		KeyLogWriter:     s.KeyLog,
	}
	if s.Resumption {
		c.ClientSessionCache = tls.NewLRUClientSessionCache(64)
	}
	if h := s.Handshakes; h != nil {
		// Called after every full or resumed handshake, also by quic-go.
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			h.observe(cs, c.CurvePreferences)
			return nil
		}
	}
	return c
}

// QUICTLS forces TLS 1.3, which QUIC requires.
func QUICTLS(c *tls.Config) *tls.Config {
	c.MinVersion, c.MaxVersion = tls.VersionTLS13, tls.VersionTLS13
	return c
}

// Control sets the TCP congestion control on a socket before it connects
// or listens.
func (s Settings) Control(_, _ string, c syscall.RawConn) error {
	if s.Congestion == "" {
		return nil
	}
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, s.Congestion)
	})
	if err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("TCP_CONGESTION %s: %w", s.Congestion, serr)
	}
	return nil
}

// ErrorLog is a logger for a server library's own messages, writing to
// ServerLog (or nowhere).
func (s Settings) ErrorLog() *log.Logger {
	w := s.ServerLog
	if w == nil {
		w = io.Discard
	}
	return log.New(w, "", log.LstdFlags|log.Lmicroseconds)
}
