package cellrun

import (
	"fmt"
	"io"

	"tlab/internal/proto"
	"tlab/internal/workload"
)

// Serve starts a role's server (workload.Serving). On a host whose CPU
// the topology limits, the server runs in a child process inside the
// host, in its cgroup, so that the limit holds it as a 1-vCPU cloud task
// is held; tlab's own process is never limited. Elsewhere, for an
// external broker (already a program started in the host, so in its
// cgroup), and for a kind that reports to the workload as it runs (the
// frame server: workload.ServesHere), it runs here, in the host's
// network.
func (h Hosts) Serve(role, kind string, r workload.ServerRequest) (io.Closer, error) {
	host := h.Tb.Host(h.host(role))
	if host == nil {
		return nil, fmt.Errorf("no host plays %q", role)
	}
	external := kind == workload.ServerBroker && r.Broker != "" && r.Broker != proto.BrokerEmbedded
	if !host.CPULimited() || external || workload.ServesHere(kind) {
		return workload.StartServerIn(host, kind, r)
	}
	req, err := workload.NewServerProcessRequest(kind, r)
	if err != nil {
		return nil, fmt.Errorf("%s server for %s: %w", kind, role, err)
	}
	return host.StartServerProcess(req, r.Settings.ServerLog)
}
