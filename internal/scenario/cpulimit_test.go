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
