package experiment

import (
	"os"
	"path/filepath"
	"testing"
	"tlab/internal/cellrun"
)

// TestSuiteTestbedFollowsEachRunsRule: the command line checks privileges
// once for a suite when a part builds a testbed here, by the rule a run
// applies to its own cells: a cell at no site, or a link emulated in
// front of the real path. The command line's own rule ("not remote, or
// a replay") said a remote suite builds nothing, which is false for a
// part whose link: is emulated in front of the path (agentSite builds a
// testbed of two hosts for it).
func TestSuiteTestbedFollowsEachRunsRule(t *testing.T) {
	dir := t.TempDir()
	write := func(name, extra string) string {
		path := filepath.Join(dir, name+".yaml")
		text := "name: " + name + "\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 10\nwarmup: 0s\n" + extra
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	plain, inFront := write("plain", ""), write("infront", "link: {rate: 50Mbit}\n")
	remote := Run{Remote: &cellrun.RemoteTarget{Addr: "192.0.2.1:7000"}}
	for _, c := range []struct {
		what  string
		parts []string
		base  Run
		want  bool
	}{
		{"emulated here", []string{plain}, Run{}, true},
		{"every cell across the real path", []string{plain}, remote, false},
		{"a link emulated in front of the real path", []string{plain, inFront}, remote, true},
		{"a replay on the recording (an emulated network)", []string{plain}, Run{Remote: remote.Remote, Replay: "ethernet"}, true},
		{"a part that does not load", []string{filepath.Join(dir, "missing.yaml")}, remote, true},
	} {
		s := Suite{Record: SuiteRecord{Name: "s", Parts: c.parts}}
		if got := s.Testbed(c.base); got != c.want {
			t.Errorf("%s: Testbed %v, want %v", c.what, got, c.want)
		}
	}
}
