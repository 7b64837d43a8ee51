package experiment

import (
	"context"
	"strings"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// lifeSite is a fake site that counts its per-run life.
type lifeSite struct {
	fakeSite
	started, noted, finished int
}

func (s *lifeSite) Start(context.Context) error { s.started++; return nil }
func (s *lifeSite) Note(*results.Manifest)      { s.noted++ }
func (s *lifeSite) Finish(bool) error           { s.finished++; return nil }

// TestBehindAPerfectLinkIsTheSiteItself: a link put in front of a site
// (Behind) that emulates nothing (a perfect link: no overrides on the
// site's network) leaves the cell at the site as it is: its meter, its
// hosts, its round trip, nothing emulated; and the site's per-run life is
// its own, reached through the wrapper.
func TestBehindAPerfectLinkIsTheSiteItself(t *testing.T) {
	sc, err := scenario.Parse("behind.yaml", []byte("name: behind\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	inner := &lifeSite{fakeSite: fakeSite{rtt: 3.5}}
	perfect := func(cellrun.CellSpec, workload.Info) (emu.LinkConfig, error) { return emu.LinkConfig{}, nil }
	site := cellrun.Behind(perfect, inner)
	if err := site.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	site.Note(&results.Manifest{})
	res, err := cellrun.RunCell(context.Background(), siteSpec(t, sc, site), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := site.Finish(true); err != nil {
		t.Fatal(err)
	}
	if inner.started != 1 || inner.noted != 1 || inner.finished != 1 {
		t.Errorf("the site started %d, noted %d, finished %d times; want once each, through the link in front", inner.started, inner.noted, inner.finished)
	}
	if inner.opened != 1 || inner.closed != 1 || inner.meter.stats == 0 {
		t.Errorf("the site was opened %d, closed %d times, its meter read %d times: want the cell at the site itself", inner.opened, inner.closed, inner.meter.stats)
	}
	if v := res.Summary.Float("rtt_ms"); v != 3.5 {
		t.Errorf("rtt_ms %v: want the site's own 3.5, nothing added in front", v)
	}
}

// TestBehindNeedsRolesOnThisMachine: a link that emulates something in
// front of a site whose places say nothing of what lies beyond (no roles
// on this machine to move behind it) is refused, and what the site
// opened is still closed by the cell.
func TestBehindNeedsRolesOnThisMachine(t *testing.T) {
	sc, err := scenario.Parse("behind.yaml", []byte("name: behind\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	inner := &lifeSite{}
	lossy := func(cellrun.CellSpec, workload.Info) (emu.LinkConfig, error) {
		var c emu.LinkConfig
		c.Up.Loss.Rate = 0.01
		return c, nil
	}
	_, err = cellrun.RunCell(context.Background(), siteSpec(t, sc, cellrun.Behind(lossy, inner)), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no roles on this machine to put behind an emulated link") {
		t.Errorf("err %v: want the refusal", err)
	}
	if inner.opened != 1 || inner.closed != 1 {
		t.Errorf("the site was opened %d, closed %d times: want what it opened closed", inner.opened, inner.closed)
	}
}
