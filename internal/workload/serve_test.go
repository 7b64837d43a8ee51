package workload

import (
	"io"
	"net"
	"testing"

	"tlab/internal/dns"
	"tlab/internal/proto"
)

// servingHosts are Hosts that start servers themselves (as the agent's
// do for a role across a real path): they record what they were asked.
type servingHosts struct {
	fakeHosts
	asked []servedAt
}

type servedAt struct {
	role, kind string
	r          ServerRequest
}

func (h *servingHosts) Serve(role, kind string, r ServerRequest) (io.Closer, error) {
	h.asked = append(h.asked, servedAt{role, kind, r})
	return io.NopCloser(nil), nil
}

// TestServersAreAskedOfTheRolesHost: a workload asks for its servers in
// one way, whatever plays the role. Hosts that serve (the agent's) are
// asked for each (the request-response server on the server's port, the
// name server on DNS's, both with the protocol's name and the run's
// settings), and nothing starts in this process; Hosts that do not have
// the server started here, in the role's network.
func TestServersAreAskedOfTheRolesHost(t *testing.T) {
	f := &memFetcher{}
	env, _ := newEnv(t, "fetch", f, fakeHosts{})
	hosts := &servingHosts{}
	env.Hosts = hosts
	stop, err := StartServer(env)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	serverIP := net.IPv4(192, 0, 2, 7)
	names, err := serveNames(env, "server", serverIP)
	if err != nil {
		t.Fatal(err)
	}
	names.Close()
	if f.served {
		t.Error("the server started in this process: want it asked of the role's host")
	}
	if len(hosts.asked) != 2 {
		t.Fatalf("the hosts were asked for %d servers, want 2: %+v", len(hosts.asked), hosts.asked)
	}
	rr, names2 := hosts.asked[0], hosts.asked[1]
	if rr.role != "server" || rr.kind != ServerRequestResponse || rr.r.Port != ServerPort || rr.r.Protocol == nil || rr.r.Protocol.Name != "fetch" {
		t.Errorf("asked %+v: want the fetch stack's request-response server on port %d for role server", rr, ServerPort)
	}
	if names2.role != "server" || names2.kind != ServerDNS || names2.r.Port != dns.Port || len(names2.r.Names) != 1 || !names2.r.Names[proto.ServerName].Equal(serverIP) {
		t.Errorf("asked %+v: want the name server on port %d answering %s with %s", names2, dns.Port, proto.ServerName, serverIP)
	}

	local, _ := newEnv(t, "fetch", f, fakeHosts{})
	stop, err = StartServer(local)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if !f.served {
		t.Error("Hosts that do not serve: the server did not start in this process")
	}
}
