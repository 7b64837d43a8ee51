package experiment

import (
	"context"
	"strings"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/cross"
	"tlab/internal/plan"
	"tlab/internal/proto"
	"tlab/internal/scenario"
)

// farServerHosts play the server's role on another machine (as the
// agent's hosts do) and every other role here.
type farServerHosts struct{ loopbackHosts }

func (farServerHosts) IsRemote(role string) bool { return role == "server" }

// TestAWorkloadBesideNeedsItsServersHere: a workload beside the cell's
// (beside:) starts its servers in this process; at a place whose hosts
// play its server role on another machine it is refused with what to use
// instead (cross: bulk flows), whichever site made the place; where every
// role is here it starts.
func TestAWorkloadBesideNeedsItsServersHere(t *testing.T) {
	sc, err := scenario.Parse("beside.yaml", []byte("name: beside\nprofiles: [ethernet]\nprotocols: [tcp]\n"+
		"workload: {type: periodic, interval: 10ms}\ncount: 5\nbeside:\n  - name: loop\n    protocol: tcp\n    workload: {type: periodic, interval: 20ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := plan.Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	spec := cellrun.SpecOf(cells[0], 1)
	ends := func(string) (cross.Endpoints, error) { return cross.Endpoints{}, nil }
	far := cellrun.Besides(spec)[0]
	err = far.Start(context.Background(), &cellrun.Place{Hosts: farServerHosts{}, Beside: ends}, proto.DefaultSettings())
	if err == nil || !strings.Contains(err.Error(), "across a real path, cross: bulk flows load it") {
		t.Errorf("a beside workload whose server is on another machine: %v, want the refusal", err)
	}
	here := cellrun.Besides(spec)[0]
	if err := here.Start(context.Background(), &cellrun.Place{Hosts: loopbackHosts{}, Beside: ends}, proto.DefaultSettings()); err != nil {
		t.Errorf("a beside workload with every role here: %v", err)
	}
	here.Stop()
}
