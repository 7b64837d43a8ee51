package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tlab/internal/pki"
	"tlab/internal/proto"
	_ "tlab/internal/proto/all" // the agent serves registered protocols
)

// testAgent runs an agent on loopback for the test and returns it, its
// address and a pairing for it.
func testAgent(t *testing.T, limits Limits) (*Agent, string, Pairing, *syncBuffer) {
	t.Helper()
	id, err := NewIdentity("test agent")
	if err != nil {
		t.Fatal(err)
	}
	token, _ := NewToken()
	log := &syncBuffer{}
	a, err := NewAgent(id, t.TempDir(), token, limits, log)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	return a, ln.Addr().String(), Pairing{Agent: id.Fingerprint, Token: token}, log
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func dial(t *testing.T, addr string, state string, p *Pairing) (*Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, DialOptions{StateDir: state, Pairing: p, Timeout: 5 * time.Second})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serverCert makes the run's throw-away certificate as PEM.
func serverCert(t *testing.T) (*pki.Certificates, string, string) {
	t.Helper()
	certs, err := pki.NewCertificates(net.IPv4(127, 0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(certs.Server.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return certs, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certs.Server.Certificate[0]})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
}

// TestPairedControllerRunsServers: a controller pairs once with the token,
// then reconnects with no token; the agent runs a TLS request/response
// server with the run's certificate, the controller's client exchanges
// with it, and stopping it (or ending the session) frees its port.
func TestPairedControllerRunsServers(t *testing.T) {
	_, addr, pairing, _ := testAgent(t, DefaultLimits())
	state := t.TempDir()
	c, err := dial(t, addr, state, &pairing)
	if err != nil {
		t.Fatal(err)
	}
	if c.Agent.Fingerprint != pairing.Agent || c.Agent.Version != Version {
		t.Errorf("hello: %+v", c.Agent)
	}
	c.Close()
	// The second time the controller knows the agent: no token.
	c, err = dial(t, addr, state, nil)
	if err != nil {
		t.Fatalf("a paired controller reconnecting: %v", err)
	}
	certs, certPEM, keyPEM := serverCert(t)
	settings, _ := json.Marshal(proto.DefaultSettings())
	port := freePort(t)
	srv, err := c.Serve(ServeArgs{Kind: KindRequestResponse, Protocol: "tls", Port: port, Settings: settings, CertPEM: certPEM, KeyPEM: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	s := proto.DefaultSettings()
	s.Certs = certs
	stack, _ := proto.Lookup("tls")
	ex, _ := proto.As[proto.Exchanger](stack)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	client, err := ex.NewClient(ctx, proto.LocalNet{}, "127.0.0.1:"+strconv.Itoa(port), s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.Exchange(ctx, 100, 2000)
	client.Close()
	if err != nil || r.RespBytes != 2000 {
		t.Fatalf("exchange with the agent's server: %v, %d bytes", err, r.RespBytes)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	waitFree(t, port)
	// A session that ends stops what it started.
	port2 := freePort(t)
	if _, err := c.Serve(ServeArgs{Kind: KindRequestResponse, Protocol: "tcp", Port: port2}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waitFree(t, port2)
	clock, err := func() (PathClock, error) {
		c, err := dial(t, addr, state, nil)
		if err != nil {
			return PathClock{}, err
		}
		return c.MeasureClock(5, time.Millisecond)
	}()
	// Both ends share this machine's clock: the offset is within its
	// stated uncertainty (plus scheduling slack).
	if err != nil || clock.Pings != 5 || clock.RTTMinMs <= 0 || clock.OffsetMs > clock.UncertaintyMs+1 || clock.OffsetMs < -clock.UncertaintyMs-1 {
		t.Errorf("clock over loopback: %+v, %v", clock, err)
	}
}

// waitFree waits until nothing listens on port any more.
func waitFree(t *testing.T, port int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			l.Close()
			return
		}
	}
	t.Errorf("port %d is still taken: the agent's server outlived its stop", port)
}

// TestStrangersAreRefused: a controller without the pairing, with a
// wrong token, with a used token, or facing another agent's identity
// gets a clear refusal; the paired controller keeps working meanwhile.
func TestStrangersAreRefused(t *testing.T) {
	a, addr, pairing, log := testAgent(t, DefaultLimits())
	owner, err := dial(t, addr, t.TempDir(), &pairing)
	if err != nil {
		t.Fatal(err)
	}
	// No pairing and never met: refused before connecting.
	if _, err := dial(t, addr, t.TempDir(), nil); !errors.Is(err, ErrNotPaired) {
		t.Errorf("a controller with no pairing: %v", err)
	}
	// The used token (a replayed token file) is refused.
	if _, err := dial(t, addr, t.TempDir(), &pairing); err == nil || !strings.Contains(err.Error(), "no pairing token") {
		t.Errorf("a replayed token: %v", err)
	}
	// Another agent's identity at the address: the controller refuses it.
	other, _ := NewIdentity("impostor")
	wrong := Pairing{Agent: other.Fingerprint, Token: pairing.Token}
	if _, err := dial(t, addr, t.TempDir(), &wrong); err == nil || !strings.Contains(err.Error(), "not the paired agent") {
		t.Errorf("a controller expecting another agent: %v", err)
	}
	// An unpaired controller that knows the fingerprint can only pair:
	// every other operation is refused.
	id, _ := NewIdentity("stranger")
	rs := rawSession(t, addr, id, pairing.Agent)
	if resp := rs.call(t, Request{Seq: 1, Op: OpServe, Args: json.RawMessage(`{"kind":"request-response","protocol":"tcp","port":5555}`)}); !strings.Contains(resp.Error, "not paired") {
		t.Errorf("an unpaired serve: %+v", resp)
	}
	// Meanwhile the owner's session works.
	if _, err := owner.MeasureClock(2, 0); err != nil {
		t.Errorf("the paired controller after the strangers: %v", err)
	}
	if !strings.Contains(log.String(), "refused") {
		t.Errorf("the agent's log says nothing of the refusals:\n%s", log)
	}
	_ = a
}

// TestWrongTokensDoNotVoidTheToken: strangers with throw-away
// certificates and wrong tokens are refused, each session ends at its
// refusal, and the owner's token still pairs afterwards (a lockout would
// let anyone void it).
func TestWrongTokensDoNotVoidTheToken(t *testing.T) {
	_, addr, pairing, _ := testAgent(t, DefaultLimits())
	for i := 0; i < 10; i++ {
		bad, _ := NewToken()
		if _, err := dial(t, addr, t.TempDir(), &Pairing{Agent: pairing.Agent, Token: bad}); err == nil || !strings.Contains(err.Error(), "wrong pairing token") {
			t.Fatalf("wrong token %d: %v", i+1, err)
		}
	}
	if _, err := dial(t, addr, t.TempDir(), &pairing); err != nil {
		t.Errorf("the right token after 10 wrong ones: %v", err)
	}
}

// ownerDialer connects from 127.0.0.2, so that the test's strangers on
// 127.0.0.1 fill their own address's share of pending connections.
func ownerDialer() *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
}

// TestStrangersCannotHoldTheAgent: hundreds of silent TCP connections and
// unpaired TLS sessions that keep asking: the agent closes what is over
// its pending limits at once, ends each unpaired session at its first
// refusal and every silent one within its life, logs a bounded number of
// lines, and the paired owner, from another address, keeps working.
func TestStrangersCannotHoldTheAgent(t *testing.T) {
	a, addr, pairing, log := testAgent(t, DefaultLimits())
	ownerState := t.TempDir()
	ctx := context.Background()
	owner, err := Dial(ctx, addr, DialOptions{StateDir: ownerState, Pairing: &pairing, Dialer: ownerDialer()})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()

	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	// All but the address's share are closed at once.
	closed := 0
	for _, c := range silent {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF || (err != nil && !isTimeout(err)) {
			closed++
		}
	}
	if want := 200 - DefaultLimits().MaxPendingPerIP; closed < want {
		t.Errorf("%d of 200 silent connections were closed at once, want at least %d", closed, want)
	}
	// The owner, from its own address, is not held up.
	if _, err := owner.MeasureClock(3, 0); err != nil {
		t.Errorf("the owner's session beside 200 silent connections: %v", err)
	}
	// From another network than the strangers' (127.0.0.1): places are
	// counted per /24.
	second, err := Dial(ctx, addr, DialOptions{StateDir: ownerState, Dialer: &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, 3)}}})
	if err != nil || second.Close() != nil {
		// Busy is the right answer while the owner's first session holds
		// the agent; anything else means a stranger held it.
		if err == nil || !strings.Contains(err.Error(), "busy") {
			t.Errorf("a second connection of the owner's: %v", err)
		}
	}
	// The silent ones still open are closed within the unpaired life.
	deadline := time.Now().Add(unpairedLife + 5*time.Second)
	for _, c := range silent {
		c.SetReadDeadline(deadline)
		if _, err := c.Read(make([]byte, 1)); isTimeout(err) {
			t.Fatalf("a silent connection was still open after %v", unpairedLife+5*time.Second)
		}
	}
	// Unpaired TLS sessions that ask again and again: each ends at its
	// first refusal.
	for i := 0; i < 20; i++ {
		id, _ := NewIdentity("stranger")
		rs := rawSession(t, addr, id, pairing.Agent)
		if resp := rs.call(t, Request{Seq: 1, Op: OpPing}); !strings.Contains(resp.Error, "not paired") {
			t.Fatalf("an unpaired ping: %+v", resp)
		}
		rs.SetReadDeadline(time.Now().Add(2 * time.Second))
		WriteFrame(rs, Request{Seq: 2, Op: OpPing})
		if _, err := ReadFrame(rs); err == nil || isTimeout(err) {
			t.Fatalf("an unpaired session still answered after its refusal: %v", err)
		}
	}
	// A session's place is given back after its connection closes, a
	// moment after the stranger sees it close: wait for it (a place kept
	// for good fails all the same).
	pending := -1
	for wait := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a.pendingMu.Lock()
		pending = a.pending
		a.pendingMu.Unlock()
		if pending == 0 || time.Now().After(wait) {
			break
		}
	}
	if pending != 0 {
		t.Errorf("%d pending places still taken after every stranger left", pending)
	}
	if _, err := owner.MeasureClock(3, 0); err != nil {
		t.Errorf("the owner's session after the strangers: %v", err)
	}
	// About 240 refusals; the log holds the burst and a line a second.
	if n := strings.Count(log.String(), "\n"); n > refusalBurst+40 {
		t.Errorf("the agent logged %d lines for the strangers:\n%s", n, log)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// failingListener fails its first accepts as a process out of file
// descriptors does, then accepts from the real listener.
type failingListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptErrorsDoNotEndTheAgent: an agent out of file descriptors
// waits and accepts again (it used to exit at the first accept error).
func TestAcceptErrorsDoNotEndTheAgent(t *testing.T) {
	id, _ := NewIdentity("test agent")
	token, _ := NewToken()
	log := &syncBuffer{}
	a, err := NewAgent(id, t.TempDir(), token, DefaultLimits(), log)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &failingListener{Listener: inner}
	ln.fails.Store(8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	c, err := dial(t, inner.Addr().String(), t.TempDir(), &Pairing{Agent: id.Fingerprint, Token: token})
	if err != nil {
		t.Fatalf("after 8 accept errors: %v\n%s", err, log)
	}
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if !strings.Contains(log.String(), "too many open files") {
		t.Errorf("the log does not say why it waited:\n%s", log)
	}
}

// rawConn is a TLS session that sends whatever the test writes.
type rawConn struct{ *tls.Conn }

func rawSession(t *testing.T, addr string, id Identity, agentFP string) rawConn {
	t.Helper()
	conf := &tls.Config{Certificates: []tls.Certificate{id.Cert}, InsecureSkipVerify: true, MinVersion: tls.VersionTLS13, NextProtos: []string{Version},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if Fingerprint(raw[0]) != agentFP {
				return errors.New("wrong agent")
			}
			return nil
		}}
	c, err := tls.Dial("tcp", addr, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return rawConn{c}
}

func (r rawConn) call(t *testing.T, req Request) Response {
	t.Helper()
	if err := WriteFrame(r, req); err != nil {
		t.Fatal(err)
	}
	return r.read(t)
}

func (r rawConn) read(t *testing.T) Response {
	t.Helper()
	b, err := ReadFrame(r)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp, err := DecodeResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// pairedState makes a controller state directory whose identity is paired
// with the agent (using up its token), for raw sessions and Clients alike.
func pairedState(t *testing.T, addr string, p Pairing) (string, Identity) {
	t.Helper()
	state := t.TempDir()
	id, err := LoadOrCreateIdentity(filepath.Join(state, "controller.pem"), "raw controller")
	if err != nil {
		t.Fatal(err)
	}
	rs := rawSession(t, addr, id, p.Agent)
	args, _ := json.Marshal(PairArgs{Token: p.Token})
	if resp := rs.call(t, Request{Seq: 1, Op: OpPair, Args: args}); resp.Error != "" {
		t.Fatal(resp.Error)
	}
	rs.closeAndWait(t)
	return state, id
}

// closeAndWait ends the session and waits until the agent has ended it.
func (r rawConn) closeAndWait(t *testing.T) {
	t.Helper()
	r.CloseWrite()
	for {
		if _, err := ReadFrame(r); err != nil {
			return
		}
	}
}

// TestMalformedAndReplayedMessages: garbage before TLS, a malformed
// message, an unknown field, a replayed sequence number and an oversized
// frame each end that session with a refusal; the agent goes on serving.
func TestMalformedAndReplayedMessages(t *testing.T) {
	_, addr, pairing, log := testAgent(t, DefaultLimits())
	// Garbage instead of a TLS handshake.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	c.Read(buf)
	c.Close()

	_, id := pairedState(t, addr, pairing)
	for name, tc := range map[string]struct {
		frame []byte
		want  string
	}{
		"not JSON":       {[]byte("\x00\x00\x00\x05hello"), "malformed request"},
		"unknown field":  {frame(`{"seq":2,"op":"ping","sudo":true}`), "unknown field"},
		"duplicate key":  {frame(`{"seq":2,"op":"ping","Op":"bye"}`), "duplicate key"},
		"unknown op":     {frame(`{"seq":2,"op":"exec","args":{"cmd":"sh"}}`), "unknown operation"},
		"trailing data":  {frame(`{"seq":2,"op":"ping"}{"seq":3,"op":"ping"}`), "data after"},
		"oversize frame": {[]byte("\x7f\xff\xff\xff"), "over the size limit"},
	} {
		t.Run(name, func(t *testing.T) {
			// Each case on a session of its own (the agent ends a
			// session after a malformed message).
			s := rawSession(t, addr, id, pairing.Agent)
			if _, err := s.Write(tc.frame); err != nil {
				t.Fatal(err)
			}
			resp := s.read(t)
			if !strings.Contains(resp.Error, tc.want) {
				t.Errorf("answer %+v, want %q", resp, tc.want)
			}
			if _, err := ReadFrame(s); err == nil {
				t.Error("the session went on after a malformed message")
			}
		})
	}
	// A replayed sequence number.
	s := rawSession(t, addr, id, pairing.Agent)
	if resp := s.call(t, Request{Seq: 5, Op: OpHello, Args: json.RawMessage(`{"version":"` + Version + `"}`)}); resp.Error != "" {
		t.Fatal(resp.Error)
	}
	if resp := s.call(t, Request{Seq: 5, Op: OpPing}); !strings.Contains(resp.Error, "replayed") {
		t.Errorf("a replayed sequence number: %+v", resp)
	}
	s.closeAndWait(t)
	// The agent still serves a paired controller.
	if resp := rawSession(t, addr, id, pairing.Agent).call(t, Request{Seq: 1, Op: OpPing}); resp.Error != "" {
		t.Errorf("after the malformed peers: %v", resp.Error)
	}
	if !strings.Contains(log.String(), "TLS handshake") {
		t.Errorf("the garbage peer is not in the log:\n%s", log)
	}
}

// frame frames s as it is, valid JSON or not.
func frame(s string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(s)))
	return append(b, s...)
}

// TestLimits: the agent refuses ports outside its range and its own
// control port, more servers than its limit, an unknown protocol, a
// capability the protocol lacks, and a noise sample too long; a silent
// controller's session ends after the idle time and its servers stop.
func TestLimits(t *testing.T) {
	limits := DefaultLimits()
	limits.MaxServers, limits.IdleS = 2, 1
	_, addr, pairing, _ := testAgent(t, limits)
	state, id := pairedState(t, addr, pairing)
	c, err := dial(t, addr, state, &pairing)
	if err != nil {
		t.Fatal(err)
	}
	_, controlPort, _ := net.SplitHostPort(addr)
	cp, _ := strconv.Atoi(controlPort)
	for _, tc := range []struct {
		args ServeArgs
		want string
	}{
		{ServeArgs{Kind: KindRequestResponse, Protocol: "tcp", Port: 80}, "refused: port 80"},
		{ServeArgs{Kind: KindRequestResponse, Protocol: "tcp", Port: cp}, "not the control port"},
		{ServeArgs{Kind: KindRequestResponse, Protocol: "nope", Port: 20000}, "unknown protocol"},
		{ServeArgs{Kind: KindRequestResponse, Protocol: "rtp", Port: 20000}, "lacks capability request-response"},
		{ServeArgs{Kind: "shell", Port: 20000}, "server kind"},
		{ServeArgs{Kind: KindRequestResponse, Protocol: "tcp", Port: 20000, Settings: json.RawMessage(`{"tcp_congestion":"warp"}`)}, "tcp congestion control"},
	} {
		if _, err := c.Serve(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if err := c.Call(OpNoise, NoiseArgs{Ms: 60000}, nil); err == nil || !strings.Contains(err.Error(), "noise sample") {
		t.Errorf("a long noise sample: %v", err)
	}
	p1, p2, p3 := freePort(t), freePort(t), freePort(t)
	for _, p := range []int{p1, p2} {
		if _, err := c.Serve(ServeArgs{Kind: KindRequestResponse, Protocol: "tcp", Port: p}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Serve(ServeArgs{Kind: KindRequestResponse, Protocol: "tcp", Port: p3}); err == nil || !strings.Contains(err.Error(), "limit 2") {
		t.Errorf("a third server: %v", err)
	}
	// A controller that goes silent (killed, or its path broke): the
	// agent ends the session after IdleS and stops its servers.
	rs := rawSession(t, addr, id, pairing.Agent)
	c.Close()
	port := freePort(t)
	// The agent frees itself when it reads the closed connection, which
	// may come after our next request: until then it answers "busy".
	serve := Request{Op: OpServe, Args: json.RawMessage(`{"kind":"request-response","protocol":"tcp","port":` + strconv.Itoa(port) + `}`)}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		serve.Seq++
		resp := rs.call(t, serve)
		if resp.Error == "" {
			break
		}
		if !strings.Contains(resp.Error, "busy") || time.Now().After(deadline) {
			t.Fatal(resp.Error)
		}
	}
	waitFree(t, p1)
	time.Sleep(1500 * time.Millisecond) // silence beyond IdleS
	waitFree(t, port)
}

// TestByeFreesTheAgentAtOnce: a controller whose Close returned has left
// nothing behind, so the next run (the next cell of a sweep, or the next
// tlab run) is served at once rather than refused as busy.
func TestByeFreesTheAgentAtOnce(t *testing.T) {
	_, addr, pairing, _ := testAgent(t, DefaultLimits())
	state := t.TempDir()
	for i := range 20 {
		p := &pairing // the first session pairs; the others are known
		if i > 0 {
			p = nil
		}
		c, err := dial(t, addr, state, p)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		port := freePort(t)
		if _, err := c.Serve(ServeArgs{Kind: KindRequestResponse, Protocol: "tcp", Port: port}); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("session %d: bye: %v", i, err)
		}
		// Bye is answered after the servers stopped.
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err != nil {
			t.Fatalf("session %d: port %d still taken after bye: %v", i, port, err)
		} else {
			l.Close()
		}
	}
}

// TestPlantedStateIsRefused: a state directory or file that another user
// could have planted, or that others may read or change, is refused with
// what is wrong and how to mend it, as sshd's StrictModes refuses it; and
// without a home directory there is no fallback to a shared one.
func TestPlantedStateIsRefused(t *testing.T) {
	owner, err := NewIdentity("attacker")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := NewIdentity("agent")
	plant := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "state")
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "controllers"), []byte(owner.Fingerprint+" planted\n"), 0o600)
		return dir
	}
	cases := []struct {
		name  string
		setup func(dir string) error
		want  string
		root  bool
	}{
		{"a directory others may write", func(dir string) error { return os.Chmod(dir, 0o777) }, "lets others write in it", false},
		{"a list others may change", func(dir string) error { return os.Chmod(filepath.Join(dir, "controllers"), 0o666) }, "lets others read or change it", false},
		{"a list that is a link", func(dir string) error {
			p := filepath.Join(dir, "controllers")
			os.Rename(p, p+".real")
			return os.Symlink(p+".real", p)
		}, "symbolic link", false},
		{"a directory of another user", func(dir string) error { return os.Chown(dir, 65534, 65534) }, "belongs to uid 65534", true},
		{"a list of another user", func(dir string) error { return os.Chown(filepath.Join(dir, "controllers"), 65534, 65534) }, "belongs to uid 65534", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			dir := plant(t)
			if err := tc.setup(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := NewAgent(id, dir, "", DefaultLimits(), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewAgent: %v, want an error saying %q", err, tc.want)
			}
		})
	}
	// The same, clean, is accepted: the planting itself is not the fault.
	if a, err := NewAgent(id, plant(t), "", DefaultLimits(), nil); err != nil {
		t.Errorf("a clean state directory: %v", err)
	} else if _, ok := a.controllers.get(owner.Fingerprint); !ok {
		t.Error("a clean list was not read")
	}
	// An identity with a key others may read.
	dir := t.TempDir()
	key := filepath.Join(dir, "agent.pem")
	if _, err := LoadOrCreateIdentity(key, "agent"); err != nil {
		t.Fatal(err)
	}
	os.Chmod(key, 0o644)
	if _, err := LoadOrCreateIdentity(key, "agent"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a key others may read: %v", err)
	}
	// No home: no state directory at all, rather than one in /tmp.
	t.Setenv("TLAB_STATE_DIR", "")
	t.Setenv("HOME", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	if d, err := StateDir(); err == nil {
		t.Errorf("without a home the state directory is %s", d)
	}
}
