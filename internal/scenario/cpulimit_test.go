package scenario

import (
	"strings"
	"testing"
	"time"
)

// TestTopologyCPULimit: topology.cpu gives a host's processes a CPU
// limit in cores over the kernel's 100 ms CFS period (1 core = 100 ms of
// CPU time per 100 ms); a host the topology lacks and a quota under the
// kernel's 1 ms are refused.
func TestTopologyCPULimit(t *testing.T) {
	s, err := Parse("t.yaml", []byte(topoBase+"topology: {type: client-server, cpu: {server: 1, client: 0.25}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := s.TestbedTopology("wifi")
	if err != nil {
		t.Fatal(err)
	}
	if l := topo.CPU["server"]; l.Quota != 100*time.Millisecond || l.Period != 100*time.Millisecond {
		t.Errorf("server: %+v, want quota 100ms per 100ms", l)
	}
	if l := topo.CPU["client"]; l.Quota != 25*time.Millisecond || l.Period != 100*time.Millisecond {
		t.Errorf("client: %+v, want quota 25ms per 100ms", l)
	}
	for _, c := range []struct{ cpu, want string }{
		{"{nobody: 1}", "unknown host"},
		{"{server: 0.005}", "at least 1ms"},
	} {
		_, err := Parse("t.yaml", []byte(topoBase+"topology: {type: client-server, cpu: "+c.cpu+"}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cpu %s: %v, want an error with %q", c.cpu, err, c.want)
		}
	}
}

// TestCPULimitOnInProcessWorkWarns: a limit holds the processes of a host
// (a workload's servers, which a limited host runs in a child of its own;
// a command's programs), never tlab's own process, where the clients of
// tlab's stacks, the publishers and subscribers, and the frame servers
// run: a limit on such a role's host is accepted with a warning naming
// the host and the role; one on a server or a broker is not.
func TestCPULimitOnInProcessWorkWarns(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		warn       string // "" for none
	}{
		{"periodic's server", topoBase + "topology: {cpu: {server: 1}}\n", ""},
		{"periodic's client", topoBase + "topology: {cpu: {client: 1}}\n", "cpu client: the host plays client"},
		{"frames' server", "name: t\nprofiles: [wifi]\nprotocols: [udp]\nworkload: {type: frames}\nduration: 1s\ntopology: {cpu: {server: 1}}\n", "cpu server: the host plays server"},
		{"pubsub's broker", "name: t\nprofiles: [wifi]\nprotocols: [mqtt-tcp]\nworkload: {type: pubsub}\nduration: 1s\ntopology: {type: chain, cpu: {broker: 1}}\n", ""},
		{"pubsub's subscriber", "name: t\nprofiles: [wifi]\nprotocols: [mqtt-tcp]\nworkload: {type: pubsub}\nduration: 1s\ntopology: {type: chain, cpu: {subscriber: 1}}\n", "cpu subscriber: the host plays subscriber"},
	} {
		s, err := Parse("t.yaml", []byte(c.yaml))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := strings.Join(s.Warnings(), "\n")
		if c.warn == "" && strings.Contains(got, "topology: cpu") {
			t.Errorf("%s: warned %q, want no cpu warning", c.name, got)
		}
		if c.warn != "" && !strings.Contains(got, c.warn) {
			t.Errorf("%s: warnings %q, want one with %q", c.name, got, c.warn)
		}
	}
}

// TestCPULimitOnOneProfile: "host@profile" limits the host on that
// profile's cells alone and wins there over the host's own limit (study
// A: a 1-vCPU cloud task, edge pods unlimited); a key without a host or
// a profile, and an unknown host, are refused.
func TestCPULimitOnOneProfile(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\nprofiles: [ethernet, cloud]\nprotocols: [tcp]\nworkload: {type: periodic}\nduration: 1s\n"+
		"topology: {cpu: {server@cloud: 1, server: 0.5, client@ethernet: 0.25}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		profile        string
		server, client time.Duration // quota per 100 ms; 0: no limit
	}{
		{"cloud", 100 * time.Millisecond, 0},
		{"ethernet", 50 * time.Millisecond, 25 * time.Millisecond},
	} {
		topo, err := s.TestbedTopology(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		for host, want := range map[string]time.Duration{"server": c.server, "client": c.client} {
			l, limited := topo.CPU[host]
			if want == 0 && limited || want != 0 && l.Quota != want {
				t.Errorf("%s on %s: %+v (limited %v), want quota %v per 100ms", host, c.profile, l, limited, want)
			}
		}
	}
	for _, c := range []struct{ cpu, want string }{
		{"{\"@cloud\": 1}", "want HOST or HOST@PROFILE"},
		{"{server@: 1}", "want HOST or HOST@PROFILE"},
		{"{nobody@cloud: 1}", "unknown host"},
	} {
		_, err := Parse("t.yaml", []byte(topoBase+"topology: {type: client-server, cpu: "+c.cpu+"}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("cpu %s: %v, want an error with %q", c.cpu, err, c.want)
		}
	}
}
