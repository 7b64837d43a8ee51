package workload

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"tlab/internal/proto"
	"tlab/internal/results"
)

// In-memory stand-ins for the protocol stacks and the testbed, so that a
// workload's scheduling, accounting and failure handling are tested
// without a network. The real stacks are tested through namespaces in
// packages proto/... and experiment.

// fakeHosts plays every role; addresses are loopback's and are never
// dialled (the fakes do not use sockets).
type fakeHosts struct{ groups map[string][]string }

func (h fakeHosts) Net(string) proto.Net                { return nil }
func (h fakeHosts) Addr(string, string) (net.IP, error) { return net.IPv4(127, 0, 0, 1), nil }
func (h fakeHosts) Group(role string) []string {
	if g, ok := h.groups[role]; ok {
		return g
	}
	return []string{role}
}

// recorder is an Env that keeps what a workload reports.
type recorder struct {
	mu      sync.Mutex
	records []results.Record
	notes   map[string]float64
	failed  []string
	windows int
}

func newEnv(t *testing.T, name string, impl any, hosts fakeHosts) (*Env, *recorder) {
	t.Helper()
	reg := proto.NewRegistry()
	reg.Register(proto.Registration{Name: name, Impl: impl})
	stack, err := reg.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{notes: map[string]float64{}}
	return &Env{
		Protocol: stack, Settings: proto.DefaultSettings(), Hosts: hosts,
		Emit:        func(r results.Record) { rec.mu.Lock(); rec.records = append(rec.records, r); rec.mu.Unlock() },
		StartWindow: func() { rec.mu.Lock(); rec.windows++; rec.mu.Unlock() },
		Note:        func(k string, v float64) { rec.mu.Lock(); rec.notes[k] = v; rec.mu.Unlock() },
		Fail:        func(why string) { rec.mu.Lock(); rec.failed = append(rec.failed, why); rec.mu.Unlock() },
	}, rec
}

// memBroker is a publish/subscribe stack in memory: every publish reaches
// every subscription whose filter matches its topic (MQTT's: the topic
// itself, or + for one level) at once, and is counted per client and
// topic in delivered. failPublish makes the nth publish (from 1) fail as
// a lost connection; refuse makes every connect fail.
type memBroker struct {
	mu          sync.Mutex
	subs        []memSub
	delivered   map[string]map[string]int // client ID → topic → messages
	publishes   int
	conns       int
	failPublish int
	refuse      bool
	noBroker    bool
	// latency delays every delivery, so that publishers running side by
	// side overlap.
	latency time.Duration
	// dialled is the broker address each client ID was made for.
	dialled map[string]string
}

func (b *memBroker) StartBroker(proto.Net, int, proto.Settings, string) (io.Closer, error) {
	if b.noBroker {
		return nil, errors.New("address already in use")
	}
	return io.NopCloser(nil), nil
}
func (b *memBroker) NewPubSubClient(_ proto.Net, addr string, _ proto.Settings, o proto.PubSubOptions) (proto.PubSubClient, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dialled == nil {
		b.dialled = map[string]string{}
	}
	b.dialled[o.ClientID] = addr
	return &memClient{b: b, o: o}, nil
}
func (b *memBroker) DefaultPort() int         { return 1883 }
func (b *memBroker) CheckBroker(string) error { return nil }

type memClient struct {
	b     *memBroker
	o     proto.PubSubOptions
	conns int
}

func (c *memClient) Connect(context.Context) (proto.ConnSetup, error) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	if c.b.refuse {
		return proto.ConnSetup{}, &net.OpError{Op: "dial", Err: errors.New("connection refused")}
	}
	c.conns++
	c.b.conns++
	// A client's later connections resume and send early data.
	return proto.ConnSetup{Start: time.Now(), ConnID: c.conns, Resumed: c.conns > 1, EarlyData: c.conns > 1, Handshake: time.Millisecond}, nil
}

type memSub struct {
	client, filter string
	deliver        func(string, []byte, time.Time)
}

// matches is MQTT's topic filter match for filters with + only.
func (s memSub) matches(topic string) bool {
	f, t := strings.Split(s.filter, "/"), strings.Split(topic, "/")
	if len(f) != len(t) {
		return false
	}
	for i := range f {
		if f[i] != "+" && f[i] != t[i] {
			return false
		}
	}
	return true
}

func (c *memClient) Subscribe(_ context.Context, filter string, _ byte) error {
	c.b.mu.Lock()
	c.b.subs = append(c.b.subs, memSub{client: c.o.ClientID, filter: filter, deliver: c.o.OnMessage})
	c.b.mu.Unlock()
	return nil
}
func (c *memClient) Publish(_ context.Context, topic string, _ byte, payload []byte) error {
	c.b.mu.Lock()
	c.b.publishes++
	if c.b.publishes == c.b.failPublish {
		c.b.mu.Unlock()
		return io.EOF
	}
	var to []memSub
	for _, s := range c.b.subs {
		if s.matches(topic) {
			to = append(to, s)
			if c.b.delivered == nil {
				c.b.delivered = map[string]map[string]int{}
			}
			if c.b.delivered[s.client] == nil {
				c.b.delivered[s.client] = map[string]int{}
			}
			c.b.delivered[s.client][topic]++
		}
	}
	c.b.mu.Unlock()
	time.Sleep(c.b.latency)
	for _, s := range to {
		s.deliver(topic, payload, time.Now())
	}
	return nil
}
func (c *memClient) Disconnect() error { return nil }
func (c *memClient) Connections() int  { return c.conns }

// memFrames is a frame transport in memory: a frame arrives whole at once,
// as one packet, and its result comes back at once; dropEvery drops every
// nth frame (from 1) before the server.
type memFrames struct {
	mu        sync.Mutex
	onFrame   func(proto.FrameArrival) int
	dropEvery int
}

func (m *memFrames) ServeFrames(_ proto.Net, _ int, _ proto.Settings, _ proto.FrameOptions, onFrame func(proto.FrameArrival) int) (io.Closer, error) {
	m.mu.Lock()
	m.onFrame = onFrame
	m.mu.Unlock()
	return io.NopCloser(nil), nil
}
func (m *memFrames) DialFrames(context.Context, proto.Net, string, proto.Settings, proto.FrameOptions) (proto.FrameClient, error) {
	return &memFrameClient{m: m, results: make(chan proto.FrameResult, 1024)}, nil
}

type memFrameClient struct {
	m       *memFrames
	results chan proto.FrameResult
	sent    int
	once    sync.Once
}

func (c *memFrameClient) Send(id uint32, payload []byte) ([]proto.Packet, error) {
	c.sent++
	p := proto.Packet{Hash: uint64(id) + 1, At: time.Now(), Size: len(payload)}
	if c.m.dropEvery > 0 && c.sent%c.m.dropEvery == 0 {
		return []proto.Packet{p}, nil
	}
	arr := proto.FrameArrival{ID: id, Complete: true, Bytes: len(payload), First: time.Now(), Last: time.Now(), Packets: []proto.Packet{{Hash: p.Hash, At: time.Now(), Size: p.Size}}}
	c.m.mu.Lock()
	on := c.m.onFrame
	c.m.mu.Unlock()
	if size := on(arr); size > 0 {
		c.results <- proto.FrameResult{ID: id, At: time.Now()}
	}
	return []proto.Packet{p}, nil
}
func (c *memFrameClient) Results() <-chan proto.FrameResult { return c.results }
func (c *memFrameClient) Close() error                      { c.once.Do(func() { close(c.results) }); return nil }

// memFetcher answers every fetch at once with the phases in order; failAt
// makes the nth fetch (from 1) fail after connecting.
type memFetcher struct {
	mu      sync.Mutex
	fetches int
	failAt  int
	served  bool
}

func (f *memFetcher) Serve(proto.Net, int, proto.Settings) (io.Closer, error) {
	f.served = true
	return io.NopCloser(nil), nil
}
func (f *memFetcher) NewClient(context.Context, proto.Net, string, proto.Settings) (proto.Client, error) {
	return nil, errors.New("not used")
}
func (f *memFetcher) Fetch(ctx context.Context, _ proto.Net, t proto.Target, _ proto.Settings, _, respSize int) (proto.Phases, error) {
	f.mu.Lock()
	f.fetches++
	n := f.fetches
	f.mu.Unlock()
	var ph proto.Phases
	if _, err := t.Lookup(ctx, time.Now(), &ph); err != nil {
		return ph, err
	}
	ph.Connect, ph.Reached = 2*time.Millisecond, "connect"
	if n == f.failAt {
		return ph, errors.New("connection reset by peer")
	}
	ph.AppConnect, ph.PreTransfer, ph.StartTransfer, ph.Total = 4*time.Millisecond, 5*time.Millisecond, 9*time.Millisecond, 10*time.Millisecond
	ph.Reached, ph.RespBytes = "total", respSize
	return ph, nil
}
