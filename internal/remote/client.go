package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// DialOptions say who the controller is and how it knows the agent.
type DialOptions struct {
	// StateDir holds the controller's identity and the agents it knows
	// (StateDir() when empty).
	StateDir string
	// Pairing, from the agent's token file, pins the agent's identity and
	// pairs with it on the first connection; later connections need only
	// the address, as SSH's known hosts.
	Pairing *Pairing
	// Timeout bounds connecting, pairing and hello (10 s when zero).
	Timeout time.Duration
	// Dialer, when set, opens the connection (its LocalAddr chooses the
	// controller's source address).
	Dialer *net.Dialer
}

// Client is a controller's session with an agent. Its methods may be
// called from several goroutines; requests go one at a time.
type Client struct {
	Addr  string
	Agent HelloResult

	mu   sync.Mutex
	conn *tls.Conn
	seq  uint64

	stop chan struct{}
	done chan struct{}
}

// ErrNotPaired means the controller has neither a pairing for the agent
// nor a remembered identity.
var ErrNotPaired = errors.New("not paired with this agent")

// Dial connects to the agent at addr, authenticates it by its pinned
// fingerprint and itself by its own identity, pairs if given a pairing,
// and says hello. A keep-alive ping runs until Close.
func Dial(ctx context.Context, addr string, o DialOptions) (*Client, error) {
	if o.StateDir == "" {
		d, err := StateDir()
		if err != nil {
			return nil, err
		}
		o.StateDir = d
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	id, err := LoadOrCreateIdentity(filepath.Join(o.StateDir, "controller.pem"), "tlab controller")
	if err != nil {
		return nil, err
	}
	known, err := loadPeerList(filepath.Join(o.StateDir, "known_agents"))
	if err != nil {
		return nil, err
	}
	want, ok := known.get(addr)
	switch {
	case o.Pairing != nil:
		want = o.Pairing.Agent
	case !ok:
		return nil, fmt.Errorf("%w at %s: give the agent's --token-file once (tlab agent --token-file FILE writes it)", ErrNotPaired, addr)
	}
	conf := &tls.Config{
		Certificates: []tls.Certificate{id.Cert},
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{Version},
		// The agent's certificate is self-signed: it is checked by its
		// pinned fingerprint instead of a CA.
		InsecureSkipVerify: true,
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the agent presented no certificate")
			}
			if got := Fingerprint(raw[0]); got != want {
				return fmt.Errorf("the agent at %s is %s, not the paired agent %s: another machine answers at that address, or the agent's identity was renewed (pair again with its new --token-file)", addr, short(got), short(want))
			}
			return nil
		},
	}
	dctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	d := tls.Dialer{NetDialer: o.Dialer, Config: conf}
	nc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", addr, err)
	}
	c := &Client{Addr: addr, conn: nc.(*tls.Conn), stop: make(chan struct{}), done: make(chan struct{})}
	c.conn.SetDeadline(time.Now().Add(o.Timeout))
	if o.Pairing != nil {
		if err := c.Call(OpPair, PairArgs{Token: o.Pairing.Token}, nil); err != nil {
			c.conn.Close()
			return nil, fmt.Errorf("agent %s: pairing: %w", addr, err)
		}
	}
	if err := c.Call(OpHello, HelloArgs{Version: Version}, &c.Agent); err != nil {
		c.conn.Close()
		return nil, fmt.Errorf("agent %s: %w", addr, err)
	}
	c.conn.SetDeadline(time.Time{})
	if err := known.put(addr, want); err != nil {
		c.conn.Close()
		return nil, err
	}
	go c.keepAlive(time.Duration(max(c.Agent.Limits.IdleS, 4)) * time.Second / 4)
	return c, nil
}

// keepAlive pings so that the agent knows the controller lives.
func (c *Client) keepAlive(every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if err := c.Call(OpPing, nil, nil); err != nil {
				return
			}
		}
	}
}

// Call sends one request and decodes its result into result (when not
// nil). An error the agent gave is returned as an error.
func (c *Client) Call(op string, args, result any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	req := Request{Seq: c.seq, Op: op}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return err
		}
		req.Args = b
	}
	if err := WriteFrame(c.conn, req); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	b, err := ReadFrame(c.conn)
	if err != nil {
		return fmt.Errorf("%s: the agent closed the session: %w", op, err)
	}
	resp, err := DecodeResponse(b)
	if err != nil {
		return err
	}
	if resp.Error != "" {
		return errors.New(resp.Error)
	}
	if resp.Seq != req.Seq {
		return fmt.Errorf("%s: answer %d to request %d", op, resp.Seq, req.Seq)
	}
	if result != nil && len(resp.Result) > 0 {
		return json.Unmarshal(resp.Result, result)
	}
	return nil
}

// Serve asks the agent for a server and returns a closer that stops it.
func (c *Client) Serve(args ServeArgs) (io.Closer, error) {
	var r ServeResult
	if err := c.Call(OpServe, args, &r); err != nil {
		return nil, err
	}
	return closerFunc(func() error { return c.Call(OpStop, StopArgs{ID: r.ID}, nil) }), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Close ends the session (the agent stops everything it started).
func (c *Client) Close() error {
	select {
	case <-c.stop:
		return nil
	default:
	}
	close(c.stop)
	c.conn.SetDeadline(time.Now().Add(2 * time.Second))
	err := c.Call(OpBye, nil, nil)
	c.conn.Close()
	<-c.done
	return err
}

// PathClock is what a burst of pings says of the path and the agent's
// clock: the round trip's minimum and median, and the agent's clock
// minus this one's, within ±Uncertainty (half the minimum round trip: the
// answer was stamped somewhere inside it).
type PathClock struct {
	RTTMinMs      float64 `json:"rtt_min_ms"`
	RTTMedianMs   float64 `json:"rtt_median_ms"`
	OffsetMs      float64 `json:"clock_offset_ms"`
	UncertaintyMs float64 `json:"clock_offset_uncertainty_ms"`
	Pings         int     `json:"pings"`
}

// MeasureClock pings n times, spaced by gap.
func (c *Client) MeasureClock(n int, gap time.Duration) (PathClock, error) {
	var rtts []float64
	best := PathClock{RTTMinMs: -1}
	for i := 0; i < n; i++ {
		var r PingResult
		t0 := time.Now()
		if err := c.Call(OpPing, nil, &r); err != nil {
			return PathClock{}, err
		}
		t1 := time.Now()
		rtt := float64(t1.Sub(t0).Nanoseconds()) / 1e6
		rtts = append(rtts, rtt)
		if best.RTTMinMs < 0 || rtt < best.RTTMinMs {
			mid := t0.UnixNano() + t1.Sub(t0).Nanoseconds()/2
			best.RTTMinMs, best.OffsetMs = rtt, float64(r.TimeNs-mid)/1e6
		}
		time.Sleep(gap)
	}
	slices.Sort(rtts)
	best.RTTMedianMs = rtts[len(rtts)/2]
	best.UncertaintyMs = best.RTTMinMs / 2
	best.Pings = n
	return best, nil
}

// Host is the agent's address as this controller reaches it.
func (c *Client) Host() net.IP {
	if a, ok := c.conn.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP
	}
	return nil
}
