package remote

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"tlab/internal/proto"
	"tlab/internal/workload"
)

// Two server kinds registered from this test file, as a new kind would
// register itself: one an agent serves, one it does not. The first tells
// the test the request it was started with.
const (
	toyAgentKind = "toy-agent-kind"
	toyLocalKind = "toy-local-kind"
)

var toyAgentRequests = make(chan workload.ServerRequest, 4)

func init() {
	workload.RegisterServer(workload.ServerKind{Name: toyAgentKind, Agent: true, Start: func(_ proto.Net, r workload.ServerRequest) (io.Closer, error) {
		toyAgentRequests <- r
		return io.NopCloser(nil), nil
	}})
	workload.RegisterServer(workload.ServerKind{Name: toyLocalKind, Start: func(proto.Net, workload.ServerRequest) (io.Closer, error) {
		panic("the agent started a kind it does not serve")
	}})
}

// TestTheAgentServesTheRegistrysKinds: the agent serves a kind the
// server-kind registry marks for agents (workload.ServerKind.Agent), with
// the request as it checked it (the protocol looked up, the port, the
// controller's settings, the embedded broker, a name answered with the
// agent's own address); it refuses a kind the registry does not mark, and
// a marked kind on a port outside its limits, before starting anything.
func TestTheAgentServesTheRegistrysKinds(t *testing.T) {
	_, addr, pairing, _ := testAgent(t, DefaultLimits())
	c, err := dial(t, addr, t.TempDir(), &pairing)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	settings := proto.DefaultSettings()
	settings.TLSVersion = "1.2"
	settingsJSON, _ := json.Marshal(settings)

	srv, err := c.Serve(ServeArgs{Kind: toyAgentKind, Protocol: "tcp", Port: 5001, Settings: settingsJSON, Name: "fog.example"})
	if err != nil {
		t.Fatalf("a kind the registry marks for agents: %v", err)
	}
	r := <-toyAgentRequests
	if r.Protocol == nil || r.Protocol.Name != "tcp" || r.Port != 5001 || r.Settings.TLSVersion != "1.2" || r.Broker != proto.BrokerEmbedded ||
		len(r.Names) != 1 || !r.Names["fog.example"].Equal(net.IPv4(127, 0, 0, 1)) || r.Frames != nil {
		t.Errorf("the toy kind was started with %+v; want tcp on 5001, TLS 1.2, the embedded broker, fog.example at the agent's 127.0.0.1", r)
	}
	srv.Close()

	for _, bad := range []struct {
		args ServeArgs
		want string
	}{
		{ServeArgs{Kind: toyLocalKind, Protocol: "tcp", Port: 5002}, `refused: server kind "toy-local-kind"`},
		{ServeArgs{Kind: toyAgentKind, Protocol: "tcp", Port: 80}, "refused: port 80"},
		{ServeArgs{Kind: toyAgentKind, Protocol: "no-such-protocol", Port: 5003}, "no-such-protocol"},
	} {
		if _, err := c.Serve(bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.args, err, bad.want)
		}
	}
	if len(toyAgentRequests) != 0 {
		t.Errorf("a refused request started the toy kind: %+v", <-toyAgentRequests)
	}
}

// TestTheAgentsFrameServerKeepsWhatItSaw: the agent's frame server is
// the registry's, with the agent keeping its arrivals (its FrameSink):
// three whole frames of 3000 bytes sent to it each get the 100-byte
// result back, and the arrivals fetched afterwards are those three
// frames, whole, of 3000 bytes each.
func TestTheAgentsFrameServerKeepsWhatItSaw(t *testing.T) {
	var name string
	var ft proto.FrameTransport
	for _, n := range proto.Default.Names() {
		stack, _ := proto.Lookup(n)
		if f, ok := proto.As[proto.FrameTransport](stack); ok {
			name, ft = n, f
			break
		}
	}
	if ft == nil {
		t.Skip("no frame transport registered in this test binary")
	}
	_, addr, pairing, _ := testAgent(t, DefaultLimits())
	c, err := dial(t, addr, t.TempDir(), &pairing)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	certs, certPEM, keyPEM := serverCert(t)
	settingsJSON, _ := json.Marshal(proto.DefaultSettings())
	port := freePort(t)
	var res ServeResult
	if err := c.Call(OpServe, ServeArgs{Kind: KindFrames, Protocol: name, Port: port, Settings: settingsJSON, CertPEM: certPEM, KeyPEM: keyPEM,
		Frames: &FrameServeArgs{FPS: 30, ReassemblyMs: 200, ResultSize: 100}}, &res); err != nil {
		t.Fatalf("%s frame server: %v", name, err)
	}
	s := proto.DefaultSettings()
	s.Certs = certs
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := ft.DialFrames(ctx, proto.LocalNet{}, "127.0.0.1:"+strconv.Itoa(port), s, proto.FrameOptions{FPS: 30, ReassemblyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint32(1); id <= 3; id++ {
		if _, err := cl.Send(id, make([]byte, 3000)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-cl.Results():
		case <-ctx.Done():
			t.Fatalf("%s: frame %d got no result", name, id)
		}
	}
	cl.Close()
	arrivals, err := c.Arrivals(res.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(arrivals) != 3 {
		t.Fatalf("%s: %d arrivals kept, want 3", name, len(arrivals))
	}
	for i, a := range arrivals {
		if a.ID != uint32(i+1) || !a.Complete || a.Bytes != 3000 {
			t.Errorf("%s: arrival %d: frame %d, whole %v, %d bytes; want frame %d whole of 3000", name, i, a.ID, a.Complete, a.Bytes, i+1)
		}
	}
	if err := c.Call(OpStop, StopArgs{ID: res.ID}, nil); err != nil {
		t.Error(err)
	}
}
