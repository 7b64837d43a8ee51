package scenario

import (
	"slices"
	"strings"
	"testing"

	"tlab/scenarios"
)

// TestStudyAFiguresAtTheirFixedValues: study A's figures each fix values
// (../shared/docs/studies.md): Fig. 1, delay boxes by p, at d = 25 ms;
// Fig. 2, jitter, at p = 256 and d = 25 ms; Fig. 3 at d = 5 ms; Fig. 5,
// data volume, at p = 128. study-a-full draws each so; study-a-short,
// whose matrix has no p = 256, draws what its matrix holds, and no figure
// of either draws nothing.
func TestStudyAFiguresAtTheirFixedValues(t *testing.T) {
	for name, want := range map[string][]string{
		"study-a-full": {"delay_box@workload.interval=25ms", "jitter_bars@workload.interval=25ms&workload.payload=256",
			"delay_box@workload.interval=5ms", "bytes_bars@workload.payload=128", "bytes_resp_bars@workload.payload=128"},
		"study-a-short": {"delay_box@workload.interval=25ms", "delay_box@workload.interval=5ms", "bytes_bars@workload.payload=128", "bytes_resp_bars@workload.payload=128"},
	} {
		data, _ := scenarios.Read(name)
		s, err := Parse(name+".yaml", data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, plot := range want {
			if !slices.Contains(s.PlotsOrDefault(), plot) {
				t.Errorf("%s draws %v, want %s", name, s.PlotsOrDefault(), plot)
			}
		}
		for _, w := range s.Warnings() {
			if strings.Contains(w, "draws nothing") {
				t.Errorf("%s: %s", name, w)
			}
		}
	}
}
