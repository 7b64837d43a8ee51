package remote

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"tlab/internal/cross"
	"tlab/internal/dns"
	"tlab/internal/hostnoise"
	"tlab/internal/pki"
	"tlab/internal/proto"
	"tlab/internal/workload"
)

// Limits bound what one controller may ask of an agent.
type Limits struct {
	// MaxServers is how many servers may run at once.
	MaxServers int `json:"max_servers"`
	// MinPort and MaxPort bound the ports servers may bind (the name
	// server's port 53 apart); the control port is never allowed.
	MinPort int `json:"min_port"`
	MaxPort int `json:"max_port"`
	// MaxSessionS ends a session that lasts longer, whatever it does.
	MaxSessionS int `json:"max_session_s"`
	// IdleS ends a session whose controller is silent that long (the
	// controller pings every few seconds): a killed controller or a
	// broken path leaves nothing running.
	IdleS int `json:"idle_s"`
	// MaxNoiseMs bounds a host-noise sample.
	MaxNoiseMs int `json:"max_noise_ms"`
	// MaxPending bounds the connections that have not yet shown a paired
	// identity (in the TLS handshake, or unpaired and pairing), in all and
	// per source network (an IPv4 /24, an IPv6 /64: one host's or one
	// site's addresses): beyond them a new connection is closed at once,
	// and past half of MaxPending a new one is closed at random, more
	// often the fuller (admission.go). Addresses that paired before have
	// places of their own. An unpaired peer holds its place for helloWait
	// if it sends nothing, for unpairedLife at the most.
	MaxPending int `json:"max_pending"`
	// MaxPendingPerIP is the bound per source network (the JSON name
	// predates networks).
	MaxPendingPerIP int `json:"max_pending_per_ip"`
	// MaxLoadMbps and MaxLoadS bound the load a path prober sends the
	// controller for a loaded recording (0 Mbit/s: none): it fills the
	// user's own network, so it is the agent's owner who sets how much.
	// MaxLoadMbps bounds too what cross traffic's down flows send the
	// controller together (a bulk server's; 0: none).
	MaxLoadMbps int `json:"max_load_mbps"`
	MaxLoadS    int `json:"max_load_s"`
}

// DefaultLimits are an agent's limits unless told otherwise.
func DefaultLimits() Limits {
	return Limits{MaxServers: 8, MinPort: 1024, MaxPort: 65535, MaxSessionS: 7 * 24 * 3600, IdleS: 20, MaxNoiseMs: 5000,
		MaxPending: 64, MaxPendingPerIP: 8, MaxLoadMbps: 100, MaxLoadS: 10}
}

// unpairedLife is all the time a connection gets to finish its TLS
// handshake and, if its identity is not paired, to pair: a controller
// pairing with its token needs a round trip or two. A wrong token or any
// other request from an unpaired peer ends its session at once, so it
// cannot stay by asking to be refused. There is no lockout after wrong
// tokens: a 256-bit token cannot be guessed, and a lockout would only let
// a stranger void the owner's token.
const unpairedLife = 10 * time.Second

// Agent runs tlab's servers for the controllers paired with it.
type Agent struct {
	Identity Identity
	// Token is the one-time pairing token ("" : no pairing possible).
	Token  string
	Limits Limits
	Log    io.Writer

	controllers *peerList
	mu          sync.Mutex
	busy        bool // a paired session is running
	controlPort int

	// pending counts connections not yet known to be paired, in all and
	// by source network (Limits.MaxPending), kept the places taken by
	// addresses that paired before (keptPlaces), known those addresses,
	// and earlyDrop draws the random early drop's number in [0, 1).
	pendingMu        sync.Mutex
	pending          int
	pendingByNetwork map[netip.Prefix]int
	kept             int
	known            map[netip.Addr]bool
	earlyDrop        func() float64
	// refusals keeps the log from growing as fast as strangers knock.
	refusals rateLimiter
	// load is the line of Limits.MaxLoadMbps that everything sending the
	// controller a load shares (probers' fills, bulk servers' down
	// flows), across sessions: --max-load is one budget for the agent.
	// nil: the agent sends no load.
	load *cross.Pacer
}

// NewAgent makes an agent whose paired controllers are kept in dir.
func NewAgent(id Identity, dir, token string, limits Limits, log io.Writer) (*Agent, error) {
	l, err := loadPeerList(filepath.Join(dir, "controllers"))
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = io.Discard
	}
	def := DefaultLimits()
	if limits.MaxPending <= 0 {
		limits.MaxPending = def.MaxPending
	}
	if limits.MaxPendingPerIP <= 0 {
		limits.MaxPendingPerIP = def.MaxPendingPerIP
	}
	a := &Agent{Identity: id, Token: token, Limits: limits, Log: log, controllers: l,
		pendingByNetwork: map[netip.Prefix]int{}, known: pairedAddresses(l), earlyDrop: rand.Float64}
	if limits.MaxLoadMbps > 0 {
		if a.load, err = cross.NewPacer(float64(limits.MaxLoadMbps) * 1e6); err != nil {
			return nil, fmt.Errorf("--max-load: %w", err)
		}
	}
	return a, nil
}

func (a *Agent) logf(format string, args ...any) {
	fmt.Fprintf(a.Log, "%s agent: %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// refusedf logs what a stranger caused, at most refusalBurst lines at once
// and one a second after that; the lines left out are counted in the next.
func (a *Agent) refusedf(format string, args ...any) {
	ok, skipped := a.refusals.allow(time.Now())
	if !ok {
		return
	}
	if skipped > 0 {
		format += fmt.Sprintf(" (%d more refusals not logged)", skipped)
	}
	a.logf(format, args...)
}

// The refusal log's allowance.
const (
	refusalBurst = 20
	refusalEvery = time.Second
)

// rateLimiter is a token bucket of refusalBurst lines, one more each
// refusalEvery, counting what it refused.
type rateLimiter struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	skipped int
}

func (r *rateLimiter) allow(now time.Time) (ok bool, skipped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.IsZero() {
		r.tokens = refusalBurst
	} else {
		r.tokens = min(refusalBurst, r.tokens+float64(now.Sub(r.last))/float64(refusalEvery))
	}
	r.last = now
	if r.tokens < 1 {
		r.skipped++
		return false, 0
	}
	r.tokens--
	skipped, r.skipped = r.skipped, 0
	return true, skipped
}

// tlsConfig asks every peer for a certificate; who it is decides what it
// may do (pair only, or everything).
func (a *Agent) tlsConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{a.Identity.Cert},
		ClientAuth:   tls.RequireAnyClientCert,
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{Version},
	}
}

// Serve accepts controllers on ln until ctx ends. Each session runs in
// its own goroutine; a session that ends stops everything it started.
//
// Nothing a stranger does ends Serve: an accept error (out of file
// descriptors, a connection reset while queued) is waited out with a
// back-off, as net/http's Server does, and connections beyond the pending
// limits are closed as they come.
func (a *Agent) Serve(ctx context.Context, ln net.Listener) error {
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		a.controlPort = tcp.Port
	}
	go func() { <-ctx.Done(); ln.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			a.refusedf("accept: %v; retrying in %v", err, backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		backoff = 0
		ip := remoteIP(c)
		p, err := a.admit(ip)
		if err != nil {
			a.refusedf("%s: refused: %v", c.RemoteAddr(), err)
			c.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.session(ctx, c, ip, p)
		}()
	}
}

// remoteIP is a connection's source address without its port (an
// IPv4-mapped one as IPv4; the zero Addr if it is not IP's).
func remoteIP(c net.Conn) netip.Addr {
	if tcp, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// session is one controller connection. It holds a pending place (taken
// by Serve) until its peer proves to be paired.
func (a *Agent) session(ctx context.Context, raw net.Conn, ip netip.Addr, p place) {
	defer raw.Close()
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { a.release(p) }) }
	defer release()
	accepted := time.Now()
	// The first byte of a ClientHello comes within helloWait, or the
	// place goes to someone else: a connection that says nothing holds
	// it no longer.
	raw.SetDeadline(accepted.Add(helloWait))
	var first [1]byte
	if _, err := io.ReadFull(raw, first[:]); err != nil {
		a.refusedf("%s: refused: no TLS handshake within %v: %v", raw.RemoteAddr(), helloWait, err)
		return
	}
	if first[0] != tlsHandshakeRecord {
		a.refusedf("%s: refused: not a TLS handshake (first byte %#x)", raw.RemoteAddr(), first[0])
		return
	}
	raw.SetDeadline(accepted.Add(unpairedLife))
	conn := tls.Server(&readAfter{Conn: raw, head: first[:]}, a.tlsConfig())
	if err := conn.HandshakeContext(ctx); err != nil {
		a.refusedf("%s: refused: TLS handshake: %v", raw.RemoteAddr(), err)
		return
	}
	peer := Fingerprint(conn.ConnectionState().PeerCertificates[0].Raw)
	s := &session{agent: a, conn: conn, peer: peer, servers: map[int]io.Closer{}, local: raw.LocalAddr(),
		onPaired: func() { release(); a.remember(ip) }}
	_, s.paired = a.controllers.get(peer)
	if s.paired {
		raw.SetDeadline(time.Time{})
		release()
		a.remember(ip)
		a.logf("%s: controller %s connected (paired)", raw.RemoteAddr(), short(peer))
	} else {
		// The handshake's deadline stands: an unpaired peer has what is
		// left of unpairedLife to pair.
		a.refusedf("%s: controller %s connected (not paired: it may only pair)", raw.RemoteAddr(), short(peer))
	}
	defer s.end()
	sctx, cancel := context.WithTimeout(ctx, time.Duration(a.Limits.MaxSessionS)*time.Second)
	defer cancel()
	go func() { <-sctx.Done(); raw.Close() }()
	s.loop(sctx)
}

func short(fp string) string {
	if len(fp) > 16 {
		return fp[:16]
	}
	return fp
}

// session is a controller's connection and what it started.
type session struct {
	agent   *Agent
	conn    net.Conn
	peer    string
	paired  bool
	holds   bool // holds the agent's one paired session
	lastSeq uint64
	local   net.Addr

	// servers are what the session started (reflectors and frame
	// servers among them), by ID.
	servers map[int]io.Closer
	nextID  int
	ended   bool
	// onPaired gives back the connection's pending place once it pairs.
	onPaired func()
}

// probe starts a path prober's reflector, within the limits, answering
// only the controller's own address.
func (s *session) probe(args ProbeArgs) (any, error) {
	l := s.agent.Limits
	if len(s.servers) >= l.MaxServers {
		return nil, fmt.Errorf("refused: %d servers already run (limit %d)", len(s.servers), l.MaxServers)
	}
	if args.Port < l.MinPort || args.Port > l.MaxPort || args.Port == s.agent.controlPort {
		return nil, fmt.Errorf("refused: port %d: servers may bind %d to %d, not the control port", args.Port, l.MinPort, l.MaxPort)
	}
	if args.Seconds < 1 || args.Seconds > MaxProbeSeconds {
		return nil, fmt.Errorf("refused: a prober for %d s: want 1 to %d", args.Seconds, MaxProbeSeconds)
	}
	n, err := s.controllerOnly()
	if err != nil {
		return nil, err
	}
	r, err := startReflector(n, args.Port, time.Duration(args.Seconds)*time.Second)
	if err != nil {
		return nil, fmt.Errorf("prober on port %d: %w", args.Port, err)
	}
	s.nextID++
	s.servers[s.nextID] = r
	s.agent.logf("controller %s: path prober on port %d for %d s (server %d)", short(s.peer), args.Port, args.Seconds, s.nextID)
	return ProbeResult{ID: s.nextID, Cookie: r.cookie}, nil
}

func (s *session) loop(ctx context.Context) {
	idle := time.Duration(s.agent.Limits.IdleS) * time.Second
	for {
		if s.paired {
			// An unpaired session keeps its connection's deadline.
			s.conn.SetReadDeadline(time.Now().Add(idle))
		}
		b, err := ReadFrame(s.conn)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				s.agent.logf("controller %s: session ends: %v", short(s.peer), err)
				if errors.Is(err, ErrFrameTooLarge) {
					s.reply(Response{Error: err.Error()})
				}
			}
			return
		}
		req, err := DecodeRequest(b)
		if err != nil {
			// A malformed message ends the session: what follows it
			// cannot be trusted to be framed right.
			s.agent.logf("controller %s: refused: %v", short(s.peer), err)
			s.reply(Response{Error: "refused: " + err.Error()})
			return
		}
		if req.Seq <= s.lastSeq {
			s.agent.logf("controller %s: refused: sequence %d after %d (a replayed or reordered message)", short(s.peer), req.Seq, s.lastSeq)
			s.reply(Response{Seq: req.Seq, Error: fmt.Sprintf("refused: sequence %d after %d: a replayed or reordered message", req.Seq, s.lastSeq)})
			return
		}
		s.lastSeq = req.Seq
		result, err := s.handle(req)
		resp := Response{Seq: req.Seq}
		if err != nil {
			resp.Error = err.Error()
		} else if result != nil {
			if resp.Result, err = json.Marshal(result); err != nil {
				resp.Error = err.Error()
			}
		}
		if err := s.reply(resp); err != nil {
			s.agent.logf("controller %s: session ends: answering %s: %v", short(s.peer), req.Op, err)
			return
		}
		if req.Op == OpBye || !s.paired {
			// A stranger's request was refused: its session ends rather
			// than stay open to be refused again.
			return
		}
	}
}

func (s *session) reply(r Response) error {
	s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return WriteFrame(s.conn, r)
}

// end stops every server the session started and frees the agent. It
// runs once: at bye, before the answer (so a controller that starts its
// next session as soon as bye returns is not refused as busy), or when
// the connection ends.
func (s *session) end() {
	if s.ended {
		return
	}
	s.ended = true
	for id, c := range s.servers {
		c.Close()
		delete(s.servers, id)
	}
	if s.holds {
		s.agent.mu.Lock()
		s.agent.busy = false
		s.agent.mu.Unlock()
	}
	s.agent.logf("controller %s: session over; nothing of it runs", short(s.peer))
}

// handle performs one request.
func (s *session) handle(req Request) (any, error) {
	if req.Op == OpPair {
		return nil, s.pair(req)
	}
	if !s.paired {
		s.agent.refusedf("controller %s: refused: %s from a controller that is not paired", short(s.peer), req.Op)
		return nil, errors.New("refused: this controller is not paired with the agent: give tlab run the agent's --token-file once")
	}
	if !s.holds {
		a := s.agent
		a.mu.Lock()
		busy := a.busy
		if !busy {
			a.busy, s.holds = true, true
		}
		a.mu.Unlock()
		if busy {
			return nil, errors.New("refused: busy: another controller session is running on this agent")
		}
	}
	switch req.Op {
	case OpHello:
		var args HelloArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		if args.Version != Version {
			return nil, fmt.Errorf("refused: control protocol %q, this agent speaks %q: use the same tlab version on both machines", args.Version, Version)
		}
		host, _ := os.Hostname()
		return HelloResult{Version: Version, Fingerprint: s.agent.Identity.Fingerprint, Hostname: host, Limits: s.agent.Limits}, nil
	case OpPing:
		if err := decodeArgs(req, &struct{}{}); err != nil {
			return nil, err
		}
		return PingResult{TimeNs: time.Now().UnixNano()}, nil
	case OpServe:
		var args ServeArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		return s.serve(args)
	case OpStop:
		var args StopArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		c, ok := s.servers[args.ID]
		if !ok {
			return nil, fmt.Errorf("no server %d in this session", args.ID)
		}
		delete(s.servers, args.ID)
		return nil, c.Close()
	case OpNoise:
		var args NoiseArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		if args.Ms < 1 || args.Ms > s.agent.Limits.MaxNoiseMs {
			return nil, fmt.Errorf("refused: a noise sample of %d ms: want 1 to %d", args.Ms, s.agent.Limits.MaxNoiseMs)
		}
		p := hostnoise.Start()
		time.Sleep(time.Duration(args.Ms) * time.Millisecond)
		return p.Stop(), nil
	case OpProbe:
		var args ProbeArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		return s.probe(args)
	case OpProbeReport:
		var args StopArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		r, ok := s.servers[args.ID].(*reflector)
		if !ok {
			return nil, fmt.Errorf("no prober %d in this session", args.ID)
		}
		rep := r.report()
		r.Close()
		delete(s.servers, args.ID)
		return rep, nil
	case OpProbeFill:
		var args FillArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		r, ok := s.servers[args.ID].(*reflector)
		if !ok {
			return nil, fmt.Errorf("no prober %d in this session", args.ID)
		}
		l := s.agent.Limits
		if err := r.fill(args, s.agent.load, time.Duration(l.MaxLoadS)*time.Second); err != nil {
			return nil, err
		}
		s.agent.logf("controller %s: prober %d sends a load of %.1f Mbit/s for %d ms", short(s.peer), args.ID, args.RateBps/1e6, args.Millis)
		return struct{}{}, nil
	case OpBulkCounts:
		var args StopArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		b, ok := s.servers[args.ID].(*cross.BulkServer)
		if !ok {
			return nil, fmt.Errorf("no bulk server %d in this session", args.ID)
		}
		return b.Counts(), nil
	case OpArrivals:
		var args ArrivalsArgs
		if err := decodeArgs(req, &args); err != nil {
			return nil, err
		}
		fs, ok := s.servers[args.ID].(*frameServer)
		if !ok || args.From < 0 {
			return nil, fmt.Errorf("no frame server %d in this session", args.ID)
		}
		return fs.page(args.From)
	case OpBye:
		s.end()
		return nil, nil
	}
	return nil, fmt.Errorf("unknown operation %q", req.Op)
}

// pair checks the one-time token and remembers the controller.
func (s *session) pair(req Request) error {
	var args PairArgs
	if err := decodeArgs(req, &args); err != nil {
		return err
	}
	a := s.agent
	if s.paired {
		return nil // already paired: nothing to do
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.Token == "" {
		a.refusedf("controller %s: refused: pairing, but the agent has no token", short(s.peer))
		return errors.New("refused: this agent has no pairing token (it was used): restart tlab agent to make a new one")
	}
	if subtle.ConstantTimeCompare([]byte(args.Token), []byte(a.Token)) != 1 {
		a.refusedf("controller %s: refused: wrong pairing token", short(s.peer))
		return errors.New("refused: wrong pairing token")
	}
	a.Token = "" // one time only
	if err := a.controllers.put(s.peer, fmt.Sprintf("paired %s from %s", time.Now().UTC().Format(time.RFC3339), s.conn.RemoteAddr())); err != nil {
		return fmt.Errorf("remembering the controller: %w", err)
	}
	s.paired = true
	s.conn.SetDeadline(time.Time{})
	if s.onPaired != nil {
		s.onPaired()
	}
	a.logf("controller %s: paired (the token is used up)", short(s.peer))
	return nil
}

// serve starts one of tlab's servers within the limits.
func (s *session) serve(args ServeArgs) (any, error) {
	l := s.agent.Limits
	if len(s.servers) >= l.MaxServers {
		return nil, fmt.Errorf("refused: %d servers already run (limit %d)", len(s.servers), l.MaxServers)
	}
	portOK := args.Port >= l.MinPort && args.Port <= l.MaxPort && args.Port != s.agent.controlPort
	if args.Kind == KindDNS {
		portOK = args.Port == dns.Port
	}
	if !portOK {
		return nil, fmt.Errorf("refused: port %d: servers may bind %d to %d (the name server 53), not the control port", args.Port, l.MinPort, l.MaxPort)
	}
	// A transport that binds more than its port (RTP's RTCP on the next)
	// gets every one checked.
	if stack, err := proto.Lookup(args.Protocol); err == nil && args.Kind != KindDNS {
		if pu, ok := proto.As[proto.PortUser](stack); ok {
			for _, p := range pu.Ports(args.Port) {
				if p < l.MinPort || p > l.MaxPort || p == s.agent.controlPort {
					return nil, fmt.Errorf("refused: %s on port %d also binds %d: servers may bind %d to %d, not the control port", args.Protocol, args.Port, p, l.MinPort, l.MaxPort)
				}
			}
		}
	}
	if args.Kind != KindBulk && !workload.AgentServes(args.Kind) {
		return nil, fmt.Errorf("refused: server kind %q: want %s or %s", args.Kind, strings.Join(workload.AgentKinds(), ", "), KindBulk)
	}
	c, err := s.serveProtocol(args)
	if err != nil {
		return nil, fmt.Errorf("%s server on port %d: %w", args.Kind, args.Port, err)
	}
	s.nextID++
	s.servers[s.nextID] = c
	s.agent.logf("controller %s: %s %s on port %d (server %d)", short(s.peer), args.Kind, args.Protocol, args.Port, s.nextID)
	return ServeResult{ID: s.nextID}, nil
}

// controllerOnly is the network the session's servers listen in: the
// agent's own, where the kernel delivers them only what the controller's
// address sends (allowNet). No one else reaches a server of the session,
// and no one else can be made the target of its answers.
func (s *session) controllerOnly() (allowNet, error) {
	peer, ok := s.conn.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return allowNet{}, errors.New("the controller's address is not TCP's")
	}
	return newAllowNet(peer.IP)
}

// serveProtocol starts a server of a kind the server-kind registry says
// an agent serves (workload.AgentServes), or the bulk flows' far end,
// with the controller's settings and the run's certificate: every field
// of the request is checked and bounded here, whatever the controller
// checked, and the server listens for the controller alone.
func (s *session) serveProtocol(args ServeArgs) (io.Closer, error) {
	n, err := s.controllerOnly()
	if err != nil {
		return nil, err
	}
	var stack *proto.Stack
	if args.Kind != KindBulk && args.Protocol != "" { // the name server has none
		if stack, err = proto.Lookup(args.Protocol); err != nil {
			return nil, err
		}
	}
	settings := proto.DefaultSettings()
	if len(args.Settings) > 0 {
		if err := decodeStrict(args.Settings, &settings); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
	}
	if err := settings.Validate(); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	if args.CertPEM != "" {
		cert, err := tls.X509KeyPair([]byte(args.CertPEM), []byte(args.KeyPEM))
		if err != nil {
			return nil, fmt.Errorf("server certificate: %w", err)
		}
		settings.Certs = &pki.Certificates{Server: cert}
	} else {
		settings.Certs = &pki.Certificates{}
	}
	if args.Kind == KindBulk {
		// The down flows send toward the controller alone (allowNet), on
		// the agent's one line of --max-load, shared with every other
		// bulk server and fill; none when it is 0.
		return cross.ServeBulk(n, args.Protocol, args.Port, settings, cross.BulkOptions{Pacer: s.agent.load, NoDown: s.agent.load == nil})
	}
	// Only the embedded broker: the agent starts no program.
	req := workload.ServerRequest{Protocol: stack, Port: args.Port, Settings: settings, Broker: proto.BrokerEmbedded}
	if args.Name != "" {
		// A name answered with the agent's own address, never one the
		// controller gives.
		req.Names = map[string]net.IP{args.Name: s.local.(*net.TCPAddr).IP}
	}
	if args.Frames == nil {
		return workload.StartServerIn(n, args.Kind, req)
	}
	fs, err := newFrameServer(args.Frames)
	if err != nil {
		return nil, err
	}
	req.Frames = &workload.FrameRequest{Options: fs.opts, ResultSize: args.Frames.ResultSize,
		Processing: time.Duration(args.Frames.ProcessingMs * 1e6), Sink: fs}
	if fs.srv, err = workload.StartServerIn(n, args.Kind, req); err != nil {
		return nil, err
	}
	return fs, nil
}

// AgentOptions configure `tlab agent`.
type AgentOptions struct {
	// Listen is the control channel's address (":7447" when empty).
	Listen string
	// StateDir keeps the agent's identity and paired controllers.
	StateDir string
	// NoToken starts without a pairing token (only controllers paired
	// before can connect).
	NoToken bool
	Limits  Limits
	Log     io.Writer
}

// DefaultPort is the control channel's port unless told otherwise.
const DefaultPort = 7447

// PrepareAgent loads (or makes) the agent's identity, makes a one-time
// pairing token and opens the control listener. The caller prints the
// pairing and calls Serve.
func PrepareAgent(o AgentOptions) (*Agent, Pairing, net.Listener, error) {
	if o.Listen == "" {
		o.Listen = fmt.Sprintf(":%d", DefaultPort)
	}
	if o.StateDir == "" {
		d, err := StateDir()
		if err != nil {
			return nil, Pairing{}, nil, err
		}
		o.StateDir = d
	}
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits()
	}
	dir := filepath.Join(o.StateDir, "agent")
	id, err := LoadOrCreateIdentity(filepath.Join(dir, "agent.pem"), "tlab agent")
	if err != nil {
		return nil, Pairing{}, nil, err
	}
	token := ""
	if !o.NoToken {
		if token, err = NewToken(); err != nil {
			return nil, Pairing{}, nil, err
		}
	}
	a, err := NewAgent(id, dir, token, o.Limits, o.Log)
	if err != nil {
		return nil, Pairing{}, nil, err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, Pairing{}, nil, fmt.Errorf("control channel: %w", err)
	}
	return a, Pairing{Agent: id.Fingerprint, Token: token}, ln, nil
}
