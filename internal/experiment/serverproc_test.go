package experiment

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/emu"
	"tlab/internal/pki"
	"tlab/internal/proto"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// TestLimitedHostsServerRunsInItsCgroup: a workload's server on a host
// whose CPU the topology limits runs where the limit reaches it, in the
// host's cgroup, and still answers with the run's certificate (HTTP/2
// over TLS, HTTP/3 over QUIC). The host's cgroup counts only what runs
// in it: a server started in tlab's own process leaves its CPU time at
// zero, however many exchanges it answers.
func TestLimitedHostsServerRunsInItsCgroup(t *testing.T) {
	requireRoot(t)
	topo := testbed.ClientServer(emu.LinkConfig{})
	topo.CPU = map[string]testbed.CPULimit{"server": testbed.LimitCPUs(1)}
	tb, err := testbed.Build(topo, testbed.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	h := cellrun.Hosts{Tb: tb, Roles: map[string]string{"client": "client", "server": "server"}}
	ip, err := h.Addr("client", "server")
	if err != nil {
		t.Fatal(err)
	}
	s := proto.DefaultSettings()
	if s.Certs, err = pki.NewCertificates(ip); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"h2", "h3"} {
		stack, err := proto.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		before, err := tb.Host("server").CPUUsage()
		if err != nil {
			t.Fatal(err)
		}
		port := 7300 + i
		srv, err := h.Serve("server", workload.ServerRequestResponse, workload.ServerRequest{Protocol: stack, Port: port, Settings: s})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ex, _ := proto.As[proto.Exchanger](stack)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := ex.NewClient(ctx, h.Net("client"), net.JoinHostPort(ip.String(), strconv.Itoa(port)), s)
		if err != nil {
			cancel()
			srv.Close()
			t.Fatalf("%s: client: %v", name, err)
		}
		for range 20 {
			if _, err := c.Exchange(ctx, 100, 100_000); err != nil {
				t.Errorf("%s: exchange: %v", name, err)
				break
			}
		}
		c.Close()
		cancel()
		if err := srv.Close(); err != nil {
			t.Errorf("%s: closing the server: %v", name, err)
		}
		after, err := tb.Host("server").CPUUsage()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the server host's cgroup counted %v", name, after-before)
		if after <= before {
			t.Errorf("%s: the server host's cgroup counted no CPU time: its server ran outside it", name)
		}
	}
}
