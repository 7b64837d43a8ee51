package cellrun

import (
	"net"
	"testing"

	"tlab/internal/proto"
)

// TestAHelperOfTheAgentsBrokerRunsHere: across a real path the broker
// runs on the agent, where tlab can start no client, so a helper client
// of it (the pubsub pacer) runs at the subscriber's host (this machine's
// network, or the one behind the link emulated in front of the path) and
// reaches the broker at the agent's address; a helper of a server that
// runs here sits beside it, over loopback.
func TestAHelperOfTheAgentsBrokerRunsHere(t *testing.T) {
	agentIP := net.IPv4(192, 0, 2, 1)
	behind := behindNet{id: 7} // stands for the network behind the link
	for _, c := range []struct {
		name  string
		hosts remoteHosts
		want  proto.Net
	}{
		{"this machine", remoteHosts{agentIP: agentIP}, proto.LocalNet{}},
		{"behind a link", remoteHosts{agentIP: agentIP, local: behind}, behind},
	} {
		n, ip, err := c.hosts.HelperOf("broker", "subscriber")
		if err != nil || n != c.want || !ip.Equal(agentIP) {
			t.Errorf("%s: helper of the broker at %v, %v (%v); want the subscriber's network and the agent's %v", c.name, n, ip, err, agentIP)
		}
		if _, ok := c.hosts.Net("broker").(agentNet); !ok {
			t.Errorf("%s: the broker's network is %T, want the agent's", c.name, c.hosts.Net("broker"))
		}
		n, ip, err = c.hosts.HelperOf("subscriber", "broker")
		if err != nil || n != c.want || !ip.Equal(net.IPv4(127, 0, 0, 1)) {
			t.Errorf("%s: helper of a server here at %v, %v (%v); want beside it over loopback", c.name, n, ip, err)
		}
	}
}

// behindNet is a network told apart from this process's own.
type behindNet struct {
	proto.LocalNet
	id int
}
