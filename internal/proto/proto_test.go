package proto

import (
	"context"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// Fake implementations of each capability, to test the registry without a
// network.
type (
	fakeExchanger struct{}
	fakeFetcher   struct{ fakeExchanger }
	fakeFrames    struct{}
	fakePubSub    struct{}
	notAStack     struct{}
)

func (fakeExchanger) Serve(Net, int, Settings) (io.Closer, error) { return nil, nil }
func (fakeExchanger) NewClient(context.Context, Net, string, Settings) (Client, error) {
	return nil, nil
}
func (fakeFetcher) Fetch(context.Context, Net, Target, Settings, int, int) (Phases, error) {
	return Phases{}, nil
}
func (fakeFrames) ServeFrames(Net, int, Settings, FrameOptions, func(FrameArrival) int) (io.Closer, error) {
	return nil, nil
}
func (fakeFrames) DialFrames(context.Context, Net, string, Settings, FrameOptions) (FrameClient, error) {
	return nil, nil
}
func (fakePubSub) StartBroker(Net, int, Settings, string) (io.Closer, error) { return nil, nil }
func (fakePubSub) NewPubSubClient(Net, string, Settings, PubSubOptions) (PubSubClient, error) {
	return nil, nil
}
func (fakePubSub) DefaultPort() int         { return 1 }
func (fakePubSub) CheckBroker(string) error { return nil }

func newFakeRegistry() *Registry {
	r := NewRegistry()
	r.Register(Registration{Name: "rr", Doc: "request/response", Options: []string{"tcp_congestion"}, Impl: fakeExchanger{}})
	r.Register(Registration{Name: "web", Doc: "fetches", Options: []string{"tls_version"}, Impl: fakeFetcher{}})
	r.Register(Registration{Name: "dgram", Doc: "frames only", Impl: fakeFrames{}})
	r.Register(Registration{Name: "broker", Impl: fakePubSub{}})
	// A second family adds frames to rr, with an option of its own.
	r.Register(Registration{Name: "rr", Doc: "frames too", Options: []string{"zero_rtt", "tcp_congestion"}, Impl: fakeFrames{}})
	return r
}

// TestCapabilitiesFollowTheImplementations: a stack can do exactly what
// its registered implementations implement, merged across families.
func TestCapabilitiesFollowTheImplementations(t *testing.T) {
	r := newFakeRegistry()
	for name, want := range map[string][]Capability{
		"rr":     {CapFrames, CapRequestResponse},
		"web":    {CapFetch, CapRequestResponse},
		"dgram":  {CapFrames},
		"broker": {CapPubSub},
	} {
		s, err := r.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Capabilities(); !slices.Equal(got, want) {
			t.Errorf("%s can %v, want %v", name, got, want)
		}
	}
	if got := r.NamesWith(CapFrames); !slices.Equal(got, []string{"dgram", "rr"}) {
		t.Errorf("frames: %v", got)
	}
	if got := r.NamesWith(""); !slices.Equal(got, []string{"rr", "web"}) {
		t.Errorf("the zero capability lists %v, want the request/response stacks", got)
	}
	rr, _ := r.Lookup("rr")
	if got := rr.Options(); !slices.Equal(got, []string{"tcp_congestion", "zero_rtt"}) {
		t.Errorf("rr's options merge to %v", got)
	}
	if rr.Doc() != "request/response; frames too" {
		t.Errorf("rr's doc %q", rr.Doc())
	}
	if _, ok := As[FrameTransport](rr); !ok {
		t.Error("As finds no frame transport in rr")
	}
	if _, ok := As[PubSub](rr); ok {
		t.Error("As finds a pubsub stack in rr")
	}
}

// TestRequireExplains: a protocol without the capability is refused with
// what it can do and which protocols can; the zero capability is
// request/response, so a workload that says nothing refuses frames-only
// and pubsub stacks.
func TestRequireExplains(t *testing.T) {
	r := newFakeRegistry()
	if err := r.Require("rr", CapRequestResponse); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"dgram", "broker"} {
		err := r.Require(name, "")
		if err == nil {
			t.Fatalf("%s accepted by a workload that needs request/response", name)
		}
		for _, want := range []string{name + " lacks capability request-response", "protocols that can: rr, web"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: want %q", err, want)
			}
		}
	}
	if err := r.Require("rr", CapFetch); err == nil || !strings.Contains(err.Error(), "it can: frames, request-response") {
		t.Errorf("rr needing fetch: %v", err)
	}
	if err := r.Require("nope", CapFrames); err == nil || !strings.Contains(err.Error(), "unknown protocol") {
		t.Errorf("unknown protocol: %v", err)
	}
}

// TestRegisterRefusesMistakes: an unknown option, an implementation of no
// capability and a capability given twice are programming errors.
func TestRegisterRefusesMistakes(t *testing.T) {
	for name, reg := range map[string]Registration{
		"unknown option":   {Name: "x", Options: []string{"no_such_setting"}, Impl: fakeExchanger{}},
		"no capability":    {Name: "x", Impl: notAStack{}},
		"capability twice": {Name: "rr", Impl: fakeExchanger{}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register accepted %+v", reg)
				}
			}()
			newFakeRegistry().Register(reg)
		})
	}
}

// TestEveryCapabilityDocumented: every capability has a line for tlab
// protocols and the docs.
func TestEveryCapabilityDocumented(t *testing.T) {
	for _, c := range Capabilities() {
		if c.Doc() == "" {
			t.Errorf("%s has no doc", c)
		}
	}
	if Capability("").Or() != CapRequestResponse {
		t.Error("the zero capability is not request/response")
	}
}

// TestFrameOptionsBounds: a frame server's options are refused outside
// their bounds (zero reassembly is the transport's default), and no
// callback can make a server send a result above MaxResultSize.
func TestFrameOptionsBounds(t *testing.T) {
	for _, tc := range []struct {
		o  FrameOptions
		ok bool
	}{
		{FrameOptions{FPS: 30}, true},
		{FrameOptions{FPS: 30, ReassemblyTimeout: MinReassemblyTimeout}, true},
		{FrameOptions{FPS: MaxFPS, ReassemblyTimeout: MaxReassemblyTimeout}, true},
		{FrameOptions{FPS: 30, ReassemblyTimeout: 3 * time.Nanosecond}, false},
		{FrameOptions{FPS: 30, ReassemblyTimeout: MaxReassemblyTimeout + 1}, false},
		{FrameOptions{FPS: 30, ReassemblyTimeout: -time.Second}, false},
		{FrameOptions{FPS: 0}, false},
		{FrameOptions{FPS: MaxFPS + 1}, false},
		{FrameOptions{FPS: math.NaN()}, false},
	} {
		if err := tc.o.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.o, err, tc.ok)
		}
	}
	bounded := BoundedResults(func(FrameArrival) int { return 1 << 30 })
	if got := bounded(FrameArrival{}); got != MaxResultSize {
		t.Errorf("a callback asking 1 GiB gets %d, want %d", got, MaxResultSize)
	}
	if got := BoundedResults(func(FrameArrival) int { return 150 })(FrameArrival{}); got != 150 {
		t.Errorf("a result within bounds became %d", got)
	}
}
