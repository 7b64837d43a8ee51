package reqresp

import (
	"bufio"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"tlab/internal/pki"
	"tlab/internal/proto"
)

// TestFramingOverPipe exercises tlab's framing without a namespace: a
// server on one end of a net.Pipe answers requests of several sizes (small,
// one buffer, many buffers, empty), and the client reads each response
// whole, in order, with its first byte no later than its last.
func TestFramingOverPipe(t *testing.T) {
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveStream(server); server.Close() }()
	br := bufio.NewReader(client)
	for _, c := range []struct{ req, resp int }{{256, 256}, {0, 0}, {10, 64 << 10}, {1, 300 << 10}, {100 << 10, 3}} {
		go func() {
			if err := writeRequest(client, c.req, c.resp); err != nil {
				t.Errorf("write %d: %v", c.req, err)
			}
		}()
		first, last, n, err := readResponse(br)
		if err != nil || n != c.resp || last.Before(first) {
			t.Fatalf("request %d/%d: got %d bytes, first %v last %v, %v", c.req, c.resp, n, first, last, err)
		}
	}
	client.Close()
	if err := <-done; err != nil {
		t.Errorf("server: %v", err)
	}
}

// TestFramingRefusesOversizedMessages: a header asking for more than
// MaxMessage ends the stream with an error instead of an allocation.
func TestFramingRefusesOversizedMessages(t *testing.T) {
	client, server := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveStream(server); server.Close() }()
	var hdr [requestHeader]byte
	binary.BigEndian.PutUint32(hdr[0:4], 0)
	binary.BigEndian.PutUint32(hdr[4:8], proto.MaxMessage+1)
	go client.Write(hdr[:])
	if err := <-done; err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("oversized request: %v", err)
	}
	client.Close()

	c2, s2 := net.Pipe()
	go func() {
		var h [responseHeader]byte
		binary.BigEndian.PutUint32(h[:], proto.MaxMessage+1)
		s2.Write(h[:])
	}()
	if _, _, _, err := readResponse(bufio.NewReader(c2)); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("oversized response: %v", err)
	}
	c2.Close()
	s2.Close()
}

// TestServerLogGoesToSettings: net/http's own message about a failed TLS
// handshake goes to the settings' ServerLog (the cell's server.log), not to
// the terminal.
func TestServerLogGoesToSettings(t *testing.T) {
	certs, err := pki.NewCertificates(net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	s := proto.DefaultSettings()
	s.Certs, s.ServerLog = certs, &log
	stack, _ := proto.Lookup("h1s")
	ex, _ := proto.As[proto.Exchanger](stack)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv, err := ex.Serve(proto.LocalNet{}, port, s)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("not a TLS client hello\r\n\r\n"))
	c.Close()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !strings.Contains(log.String(), "TLS handshake error"); time.Sleep(20 * time.Millisecond) {
	}
	if !strings.Contains(log.String(), "TLS handshake error") {
		t.Errorf("server log: %q", log.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
