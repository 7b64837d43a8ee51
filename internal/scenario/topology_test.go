package scenario

import (
	"strings"
	"testing"
)

const topoBase = "name: t\nprofiles: [wifi]\nprotocols: [tcp]\nworkload: {type: periodic}\nduration: 1s\n"

// TestTopologiesFromScenarios: each shape builds the testbed topology it
// describes, a link named in topology.links gets its own profile, and
// mistakes name the file and the line.
func TestTopologiesFromScenarios(t *testing.T) {
	s, err := Parse("t.yaml", []byte(topoBase+"topology:\n  type: chain\n  hosts: [client, relay, server]\n  links: {relay-server: ethernet}\n"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := s.TestbedTopology("wifi")
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Links) != 2 || topo.Links[0].Name != "client-relay" || topo.Links[1].Name != "relay-server" {
		t.Fatalf("chain links: %+v", topo.Links)
	}
	wifi, _ := s.LinkFor("wifi")
	eth, _ := s.LinkFor("ethernet")
	if topo.Links[0].Config.BaseRTT() != wifi.BaseRTT() || topo.Links[1].Config.BaseRTT() != eth.BaseRTT() {
		t.Errorf("per-link profiles: %v and %v, want wifi's %v and ethernet's %v",
			topo.Links[0].Config.BaseRTT(), topo.Links[1].Config.BaseRTT(), wifi.BaseRTT(), eth.BaseRTT())
	}

	s, err = Parse("t.yaml", []byte(topoBase+"topology: {type: shared-access, stations: 3, station: client, server: server, then: [sink]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	topo, _ = s.TestbedTopology("wifi")
	if got := strings.Join(topo.Hosts, ","); got != "client1,client2,client3,server,sink" || len(topo.Links) != 2 || len(topo.Links[0].A) != 3 {
		t.Errorf("shared access: hosts %s, links %+v", got, topo.Links)
	}
	if h, err := s.TopologySpec().HostFor("client"); err != nil || h != "client1" {
		t.Errorf("the client role on shared access: %q %v", h, err)
	}

	for _, c := range []struct{ src, want string }{
		{"topology: ring\n", `t.yaml:6: topology "ring": want one of`},
		{"topology:\n  type: chain\n  hosts: [a]\n", "t.yaml:8: topology: a chain needs at least two hosts"},
		{"topology:\n  type: chain\n  hosts: [client, server]\n  links: {client-srv: ethernet}\n", `t.yaml:9: topology: no link "client-srv"`},
		{"topology:\n  type: chain\n  hosts: [client, server]\n  links: {client-server: 7g}\n", `no profile "7g"`},
		{"topology:\n  type: chain\n  hosts: [pub, broker]\n", `t.yaml:7: workload periodic: needs a host "client"`},
		{"topology:\n  type: shared-access\n  stations: 0\n", "t.yaml:8: topology: stations 0"},
		{"topology:\n  typ: chain\n", `t.yaml:7: unknown key "typ"`},
	} {
		_, err := Parse("t.yaml", []byte(topoBase+c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %q", c.src, err, c.want)
		}
	}
}
