package cellrun

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"tlab/internal/beside"
	"tlab/internal/cross"
	"tlab/internal/proto"
	_ "tlab/internal/proto/reqresp" // the workload beside's tcp
	"tlab/internal/results"
	"tlab/internal/workload"
)

// toyHosts are a toy site's hosts: every role in this process's own
// network, each offering what the site declares, and nothing else
// (lacking names the capabilities the toy site does not offer, by role).
type toyHosts struct {
	lacking map[string]workload.Capability
	asked   *[]string // the roles the workload beside asked for
}

func (h toyHosts) Net(role string) proto.Net {
	*h.asked = append(*h.asked, role)
	return proto.LocalNet{}
}
func (toyHosts) Addr(_, _ string) (net.IP, error) { return net.IPv4(127, 0, 0, 1), nil }
func (toyHosts) Group(role string) []string       { return []string{role} }
func (h toyHosts) Offers(role string, c workload.Capability) bool {
	return h.lacking[role] != c
}

// toyBesideWorkload is a client and a server that, when it runs, asks the
// hosts for both roles and says it answered three requests in 10, 40 and
// 20 ms.
type toyBesideWorkload struct{}

func (toyBesideWorkload) Info() workload.Info {
	return workload.Info{Type: "toy-beside", Roles: []string{"client", "server"}, Metrics: []string{"requests", "delay_p50_ms"}}
}

func (toyBesideWorkload) Run(_ context.Context, env *workload.Env) error {
	env.Hosts.Net("client")
	env.Hosts.Net("server")
	for i, d := range []float64{10, 40, 20} {
		env.Emit(results.Record{Seq: i, SentMs: float64(100 * i), DoneMs: float64(100*i) + d, DelayMs: d, ReqBytes: 10, RespBytes: 10})
	}
	return nil
}

// TestAWorkloadBesideRunsWhereTheSiteOffersIt: a workload beside the
// cell's runs at a site whose hosts offer a workload beside on each of
// its roles (workload.RunBeside), whichever site it is: it asks those
// hosts for its roles, and its columns come back (3 requests; their
// median delay, of 10, 20 and 40 ms, is 20 ms). At a site whose server's
// host lacks it, it is refused before it runs, naming the role and the
// capability.
func TestAWorkloadBesideRunsWhereTheSiteOffersIt(t *testing.T) {
	ends := func(string) (cross.Endpoints, error) { return cross.Endpoints{}, nil }
	flow := beside.Flow{Name: "toy", Protocol: "tcp", Workload: toyBesideWorkload{}}

	var asked []string
	offering := Besides(CellSpec{Beside: []beside.Flow{flow}})[0]
	if err := offering.Start(context.Background(), &Place{Hosts: toyHosts{asked: &asked}, Beside: ends}, proto.DefaultSettings()); err != nil {
		t.Fatalf("beside at a site that offers it: %v", err)
	}
	cols, err := offering.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if cols["beside_toy_requests"] != 3 || cols["beside_toy_delay_p50_ms"] != 20 {
		t.Errorf("beside at a site that offers it: columns %v, want 3 requests, p50 20 ms", cols)
	}
	if strings.Join(asked, ",") != "client,server" {
		t.Errorf("the workload beside asked the site's hosts for %q, want client,server", asked)
	}

	asked = nil
	lacking := Besides(CellSpec{Beside: []beside.Flow{flow}})[0]
	err = lacking.Start(context.Background(), &Place{Hosts: toyHosts{asked: &asked,
		lacking: map[string]workload.Capability{"server": workload.RunBeside}}, Beside: ends}, proto.DefaultSettings())
	var missing workload.NotOffered
	if !errors.As(err, &missing) || missing.Role != "server" || missing.Capability != workload.RunBeside ||
		!strings.Contains(err.Error(), "role server here does not offer beside") {
		t.Errorf("beside at a site whose server lacks it: %v, want refused naming role server and capability beside", err)
	}
	if cols, _ := lacking.Stop(); len(asked) > 0 || cols != nil {
		t.Errorf("a refused workload beside ran: asked for %q, columns %v", asked, cols)
	}
}

// TestTheAgentDeclaresWhatItsHostsOffer: across a real path the agent's
// roles (server, broker) offer the server kinds its session serves
// (request-response, broker, dns, frames) and neither commands nor a
// workload beside; this machine's roles offer every kind and a workload
// beside, and commands only where their network can start a program (not
// this process's own network).
func TestTheAgentDeclaresWhatItsHostsOffer(t *testing.T) {
	h := remoteHosts{agentIP: net.IPv4(192, 0, 2, 1)}
	for _, c := range []struct {
		role string
		cap  workload.Capability
		want bool
	}{
		{"server", workload.ServeKind(workload.ServerRequestResponse), true},
		{"broker", workload.ServeKind(workload.ServerBroker), true},
		{"server", workload.ServeKind(workload.ServerDNS), true},
		{"server", workload.ServeKind(workload.ServerFrames), true},
		{"server", workload.ServeKind("toy-kind"), false},
		{"server", workload.RunBeside, false},
		{"broker", workload.RunBeside, false},
		{"server", workload.RunCommands, false},
		{"client", workload.RunBeside, true},
		{"client", workload.ServeKind("toy-kind"), true},
		{"client", workload.RunCommands, false},
	} {
		if got := workload.Offers(h, c.role, c.cap); got != c.want {
			t.Errorf("the agent's hosts: role %s offers %s: %v, want %v", c.role, c.cap, got, c.want)
		}
	}
}
