package metrics

import (
	"testing"

	"tlab/internal/results"
)

// TestColumnTypeFollowsTheUnit: summary.parquet types a count (a metric
// without a unit: requests, errors, attempt) as an integer, any other
// metric as a double (a fraction or a rate per 1000 requests is no
// count), and leaves settings and unregistered columns to their values.
// The fixture's names and units are the docs/metrics.md definitions.
func TestColumnTypeFollowsTheUnit(t *testing.T) {
	var r Registry
	r.Register(Metric{Name: "requests", Kind: Measured, Definition: "Measured requests that completed."})
	r.Register(Metric{Name: "cross_flows", Kind: Parameter, Definition: "Bulk flows beside the workload."})
	r.Register(Metric{Name: "delay_p99_ms", Kind: Measured, Unit: "ms", Definition: "99th percentile."})
	r.Register(Metric{Name: "conns_per_1000", Kind: Measured, Unit: "1/1000 requests", Definition: "Connections per 1000 requests."})
	r.Register(Metric{Name: "tcp_ecn", Kind: Setting, Definition: "ECN negotiated."})
	for name, want := range map[string]results.ColumnType{
		"requests": results.Integer, "cross_flows": results.Integer, "delay_p99_ms": results.Number,
		"conns_per_1000": results.Number, "tcp_ecn": results.Inferred, "interval_ms": results.Inferred,
	} {
		if got := r.ColumnType(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	// Every registered metric without a unit is a count: the fractions and
	// rates that had none now name theirs.
	for _, name := range []string{"conns_per_1000"} {
		if m, ok := Lookup(name); ok && ColumnType(name) != results.Number {
			t.Errorf("%s (unit %q) would be typed as an integer", name, m.Unit)
		}
	}
}
