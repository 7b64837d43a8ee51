package reqresp

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// slowFirstWriter holds the server's first response back for delay: the
// response to a request whose exchange timed out, arriving late.
type slowFirstWriter struct {
	w     io.Writer
	delay time.Duration
	once  sync.Once
}

func (s *slowFirstWriter) Write(p []byte) (int, error) {
	s.once.Do(func() { time.Sleep(s.delay) })
	return s.w.Write(p)
}

// TestStreamDropsTheLateResponseOfAFailedExchange: the first exchange
// times out (its response comes 300 ms late, after its 100 ms); the
// second must answer with its own response (700 bytes), not the first's
// (100 bytes) arriving late ahead of it, and the third too.
func TestStreamDropsTheLateResponseOfAFailedExchange(t *testing.T) {
	// Loopback TCP, which buffers as the real streams do (net.Pipe
	// would block the late response against the next request).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	go serveStream(struct {
		io.Reader
		io.Writer
	}{server, &slowFirstWriter{w: server, delay: 300 * time.Millisecond}})
	c := &streamClient{stream: client, closer: client}
	ctx := context.Background()
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = c.Exchange(short, 10, 100)
	cancel()
	if err == nil {
		t.Fatal("the first exchange did not time out")
	}
	for i, want := range []int{700, 900} {
		ectx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ex, err := c.Exchange(ectx, 10, want)
		cancel()
		if err != nil {
			t.Fatalf("exchange %d: %v", i+2, err)
		}
		if ex.RespBytes != want {
			t.Errorf("exchange %d got a response of %d bytes, want its own %d", i+2, ex.RespBytes, want)
		}
	}
}
