package experiment

import (
	"slices"
	"testing"

	"tlab/internal/workload"
)

// TestEvidenceIsTheWorkloadsOwn: a boundary's account shows the figures
// the workload's cells have. The request-response figures (connections
// per 1000 requests, bytes per request, late and unsent sends, the
// sender's lateness: docs/metrics.md defines them per request) for the
// periodic workload, as before; for pubsub, whose cells have none of
// them (they read as 0 beside a pubsub boundary before), its own: bytes
// on the wire per message, messages that did not arrive, Δ+, the resumed
// and 0-RTT shares. Both keep the failed share and the emulator's
// release error, which every cell has.
func TestEvidenceIsTheWorkloadsOwn(t *testing.T) {
	for _, c := range []struct {
		name string
		want []string
	}{
		{"periodic", []string{"conns_per_1000", "bytes_per_request", "late_sends", "unsent", "lateness_p99_ms", "failed_pct", "emu_release_p99_us"}},
		{"pubsub", []string{"wire_bytes_per_message", "messages_failed", "reconnect_ms", "resumed", "used_0rtt", "failed_pct", "emu_release_p99_us"}},
	} {
		typ, err := workload.Lookup(c.name)
		if err != nil {
			t.Fatal(err)
		}
		w, err := typ.Defaults()
		if err != nil {
			t.Fatal(err)
		}
		if got := evidenceFor(w.Info()); !slices.Equal(got, c.want) {
			t.Errorf("%s: evidence %v, want %v", c.name, got, c.want)
		}
	}
}
