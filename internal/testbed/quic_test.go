package testbed

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"tlab/internal/pki"

	"github.com/quic-go/quic-go"
)

// TestQUICEchoOverDelayedLossyLink runs quic-go through a lossy, delayed
// link, captures both hosts to pcap and writes the TLS key log beside it.
func TestQUICEchoOverDelayedLossyLink(t *testing.T) {
	capDir := t.TempDir()
	tb := build(t, ClientServer(delayLoss(10*time.Millisecond, 0.02)), Options{Seed: 3, CaptureDir: capDir})
	ip, _ := tb.Addr("client", "server")
	certs, err := pki.NewCertificates(ip)
	if err != nil {
		t.Fatal(err)
	}
	keyLog, err := os.Create(filepath.Join(capDir, "keys.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer keyLog.Close()

	sconn, err := tb.Host("server").ListenUDP(&net.UDPAddr{Port: 4433})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := quic.Listen(sconn, &tls.Config{Certificates: []tls.Certificate{certs.Server}, NextProtos: []string{"tlab-echo"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				s, err := c.AcceptStream(context.Background())
				if err != nil {
					return
				}
				io.Copy(s, s)
				s.Close()
			}()
		}
	}()

	cconn, err := tb.Host("client").ListenUDP(&net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer cconn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	conn, err := quic.Dial(ctx, cconn, &net.UDPAddr{IP: ip, Port: 4433},
		&tls.Config{RootCAs: certs.Roots, ServerName: ip.String(), NextProtos: []string{"tlab-echo"}, KeyLogWriter: keyLog}, nil)
	if err != nil {
		t.Fatal(err)
	}
	handshake := time.Since(start)
	s, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 256<<10)
	rand.Read(payload)
	go func() { s.Write(payload); s.Close() }()
	got, err := io.ReadAll(s)
	if err != nil {
		t.Fatal(err)
	}
	conn.CloseWithError(0, "done")
	if !bytes.Equal(got, payload) {
		t.Fatalf("echo returned %d bytes, not the %d sent", len(got), len(payload))
	}
	// A 1-RTT handshake cannot beat the emulated 20 ms RTT.
	if handshake < 20*time.Millisecond {
		t.Errorf("handshake took %v, less than the link's RTT", handshake)
	}
	st, _ := tb.Emulator().Stats()
	path, _ := st.Link("path")
	if path.Up.DropLoss+path.Down.DropLoss == 0 {
		t.Error("2 % loss dropped nothing over 256 KiB each way")
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"client-eth0.pcap", "server-eth0.pcap"} {
		info, err := os.Stat(filepath.Join(capDir, f))
		if err != nil {
			t.Fatal(err)
		}
		// 256 KiB each way plus headers: the capture holds at least that.
		if info.Size() < 2*256<<10 {
			t.Errorf("%s holds %d bytes, less than the traffic", f, info.Size())
		}
	}
	keyLog.Sync()
	kl, _ := os.ReadFile(filepath.Join(capDir, "keys.log"))
	if !strings.Contains(string(kl), "CLIENT_TRAFFIC_SECRET_0") {
		t.Error("key log lacks the traffic secrets Wireshark needs")
	}
	t.Logf("QUIC handshake %v, echo of 256 KiB in %v, drops up %d down %d", handshake, time.Since(start), path.Up.DropLoss, path.Down.DropLoss)
}
