package experiment

import (
	"slices"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/analysis"
	"tlab/internal/scenario"
)

// TestAdhocDocumentIsBuiltAsAFileIs: an ad-hoc run's document is built
// by the run, with its overrides and, for a remote run, its cells placed
// at the agent's site after them, as a scenario file is: the command line no longer builds the
// scenario (nor makes it remote) itself. The document says ethernet and
// tcp; --set protocols=[quic] overrides the protocol, and a remote run's
// every cell is on the real path at the agent's site.
func TestAdhocDocumentIsBuiltAsAFileIs(t *testing.T) {
	doc := []byte("name: adhoc\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 10\nwarmup: 0s\n")
	local, _, err := Run{Adhoc: doc, Sets: []string{"protocols=[quic]"}}.scenario()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(local.Profiles, []string{"ethernet"}) || !slices.Equal(local.Protocols, []string{"quic"}) {
		t.Errorf("local: profiles %v, protocols %v; want [ethernet] and [quic]", local.Profiles, local.Protocols)
	}
	remote, placed, err := Run{Adhoc: doc, Sets: []string{"protocols=[quic]"}, Remote: &cellrun.RemoteTarget{Addr: "192.0.2.1:7000"}}.scenario()
	if err != nil {
		t.Fatal(err)
	}
	cells, err := remote.Cells()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(remote.Profiles, []string{analysis.RealPath}) || len(cells) == 0 || slices.ContainsFunc(cells, func(c scenario.Cell) bool { return c.Site != cellrun.AgentSite }) {
		t.Errorf("remote: profiles %v, cells %+v; want every cell on %s at the %s site", remote.Profiles, cells, analysis.RealPath, cellrun.AgentSite)
	}
	// The scenario as written is the ad-hoc document with its override.
	if placed == nil || !slices.Equal(placed.Written.Profiles, []string{"ethernet"}) || !slices.Equal(placed.Written.Protocols, []string{"quic"}) {
		t.Errorf("remote: placed %+v; want the document as written (ethernet, quic) kept apart from the placement", placed)
	}
}
