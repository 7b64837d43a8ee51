package scenario

import (
	"strings"
	"testing"
	"time"
)

// TestMultiHomedTopology: a multi-homed topology is a client on each named
// network to one server; the cell's profile goes to a network without its
// own, the fixed one keeps its profile; the handovers reach the testbed as
// written; mistakes name the file and the line.
func TestMultiHomedTopology(t *testing.T) {
	s, err := Parse("t.yaml", []byte(topoBase+`topology:
  type: multi-homed
  networks: [wifi, 5g]
  links: {5g: 5g}
  handovers:
    - {at: 6s, from: wifi, to: 5g, outage: 1s}
    - {at: 14s, from: 5g, to: wifi, overlap: 500ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := s.TestbedTopology("ethernet")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(topo.Hosts, ",") != "client,server" || len(topo.Links) != 2 || topo.Links[0].Name != "wifi" || topo.Links[1].Name != "5g" {
		t.Fatalf("hosts %v, links %+v", topo.Hosts, topo.Links)
	}
	eth, _ := s.LinkFor("ethernet")
	fiveG, _ := s.LinkFor("5g")
	if topo.Links[0].Config.BaseRTT() != eth.BaseRTT() || topo.Links[1].Config.BaseRTT() != fiveG.BaseRTT() {
		t.Errorf("link RTTs %v and %v, want the cell's ethernet %v and the fixed 5g %v", topo.Links[0].Config.BaseRTT(), topo.Links[1].Config.BaseRTT(), eth.BaseRTT(), fiveG.BaseRTT())
	}
	m := topo.MultiHome
	if m == nil || m.Host != "client" || m.Peer != "server" || len(m.Handovers) != 2 {
		t.Fatalf("multi-home %+v", m)
	}
	if h := m.Handovers[0]; h.At.D() != 6*time.Second || h.From != "wifi" || h.To != "5g" || h.Outage.D() != time.Second || h.Overlap != 0 {
		t.Errorf("first handover %+v", h)
	}
	if h := m.Handovers[1]; h.At.D() != 14*time.Second || h.Overlap.D() != 500*time.Millisecond || h.Outage != 0 {
		t.Errorf("second handover %+v", h)
	}
	for _, c := range []struct{ src, want string }{
		{"topology:\n  type: multi-homed\n  networks: [wifi]\n", "t.yaml:8: topology: a multi-homed client needs two networks"},
		{"topology:\n  type: multi-homed\n  networks: [wifi, 5g]\n  handovers: [{at: 1s, from: 5g, to: wifi}]\n", "from 5g, but the route is on wifi"},
		{"topology:\n  type: multi-homed\n  networks: [wifi, 5g]\n  handovers: [{at: 1s, from: wifi, to: 5g, outage: 1s, overlap: 1s}]\n", "not both"},
		{"topology:\n  type: multi-homed\n  networks: [wifi, 5g]\n  handovers: [{at: 1s, from: wifi, to: 5g, outgae: 1s}]\n", `unknown key "outgae"`},
		{"topology:\n  type: chain\n  networks: [wifi, 5g]\n", "t.yaml:7: topology: networks and handovers belong to a multi-homed topology"},
		{"topology:\n  type: multi-homed\n  networks: [wifi, 5g]\n  links: {5g: loss-ge-b}\n", "gilbert-elliott"},
	} {
		_, err := Parse("t.yaml", []byte(topoBase+c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %q", c.src, err, c.want)
		}
	}
}
