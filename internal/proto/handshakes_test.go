package proto

import (
	"crypto/tls"
	"net"
	"testing"

	"tlab/internal/pki"
)

// TestHandshakesRecordWhatWasNegotiated runs real crypto/tls handshakes
// over a pipe and checks that the log holds what the connection says,
// not what the settings asked: a client whose settings say p256 but that
// also offers X25519, against a server that prefers X25519, is recorded
// as x25519; a TLS 1.2 pair as 1.2.
func TestHandshakesRecordWhatWasNegotiated(t *testing.T) {
	certs, err := pki.NewCertificates(net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	handshake := func(client, server *tls.Config) tls.ConnectionState {
		t.Helper()
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		errs := make(chan error, 1)
		go func() { errs <- tls.Server(b, server).Handshake() }()
		c := tls.Client(a, client)
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		return c.ConnectionState()
	}

	s := DefaultSettings()
	s.Certs, s.KeyExchange, s.Handshakes = certs, "p256", &Handshakes{}
	client := s.ClientTLS("x")
	client.CurvePreferences = append(client.CurvePreferences, tls.X25519)
	server := s.ServerTLS("x")
	server.CurvePreferences = []tls.CurveID{tls.X25519}
	cs := handshake(client, server)
	if v, k := s.Handshakes.Negotiated(); v != "1.3" || k != "x25519" || cs.CurveID != tls.X25519 {
		t.Errorf("asked p256, negotiated %v: recorded %q %q, want 1.3 x25519", cs.CurveID, v, k)
	}

	s12 := DefaultSettings()
	s12.Certs, s12.TLSVersion, s12.Handshakes = certs, "1.2", &Handshakes{}
	handshake(s12.ClientTLS("x"), s12.ServerTLS("x"))
	handshake(s12.ClientTLS("x"), s12.ServerTLS("x"))
	if v, k := s12.Handshakes.Negotiated(); v != "1.2" || k != "x25519" || s12.Handshakes.Count() != 2 {
		t.Errorf("TLS 1.2: recorded %q %q from %d handshakes", v, k, s12.Handshakes.Count())
	}
	var none *Handshakes
	if v, k := none.Negotiated(); v != "" || k != "" {
		t.Errorf("no log: %q %q", v, k)
	}
}
