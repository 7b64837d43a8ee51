package scenario

import (
	"testing"

	"tlab/scenarios"
)

// FuzzParse: no scenario file makes the decoder panic, and one it accepts
// expands into cells (matrix, topology, settings and all).
func FuzzParse(f *testing.F) {
	for _, n := range scenarios.Names() {
		if b, ok := scenarios.Read(n); ok {
			f.Add(b)
		}
	}
	f.Add([]byte("name: t\nprofiles: [5g]\nprotocols: [tcp]\nworkload: {type: periodic}\ncross: {flows: 1}\nmatrix: {link.queue: [droptail, pie]}\nduration: 1s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if _, err := s.Cells(); err != nil {
			t.Fatalf("accepted a scenario whose cells cannot be listed: %v\n%s", err, data)
		}
	})
}
