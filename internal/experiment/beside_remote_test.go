package experiment

import (
	"context"
	"errors"
	"strings"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/cross"
	"tlab/internal/plan"
	"tlab/internal/proto"
	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// farServerHosts play the server's role on another machine (as the
// agent's hosts do), which offers no workload beside the cell's, and
// every other role here.
type farServerHosts struct{ loopbackHosts }

func (farServerHosts) Offers(role string, c workload.Capability) bool {
	return role != "server" || c != workload.RunBeside
}

// TestAWorkloadBesideNeedsItsServersHere: a workload beside the cell's
// (beside:) runs where the place's hosts offer it on each of its roles; at
// a place whose server's host does not (the agent's) it is refused,
// naming the capability and what to use instead (cross: bulk flows),
// whichever site made the place; where every role offers it it starts.
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
	if !errors.Is(err, workload.ErrNotOffered) || !strings.Contains(err.Error(), "role server here does not offer beside") ||
		!strings.Contains(err.Error(), "cross: bulk flows load a path") {
		t.Errorf("a beside workload whose server is on another machine: %v, want the refusal", err)
	}
	here := cellrun.Besides(spec)[0]
	if err := here.Start(context.Background(), &cellrun.Place{Hosts: loopbackHosts{}, Beside: ends}, proto.DefaultSettings()); err != nil {
		t.Errorf("a beside workload with every role here: %v", err)
	}
	here.Stop()
}
