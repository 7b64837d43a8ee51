package report

import (
	"testing"

	"tlab/internal/flowsim"
)

func TestFlowsimLabelsTellSimulatedFromMeasured(t *testing.T) {
	results := []flowsim.Result{
		{Allowance: "static", Source: "simulator"},
		{Allowance: "quic-go static", Source: "simulator"},
		{Allowance: "quic-go static", Source: "quic-go"},
		{Allowance: "quic-go autotuning", Source: "simulator"},
	}
	label := flowsimLabels(results)
	want := []string{"static", "quic-go static (sim)", "quic-go static (measured)", "quic-go autotuning"}
	for i, r := range results {
		if got := label(r); got != want[i] {
			t.Errorf("result %d: label %q, want %q", i, got, want[i])
		}
	}
}
