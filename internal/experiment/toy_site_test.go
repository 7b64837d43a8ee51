package experiment

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// The toy site proves the seam for sites as toy_test.go does for
// workloads: this one test file registers a kind of site with its factory,
// and a scenario that names it in sites: runs its cells there through
// Run, with no other file changed. It plays every role on this process's
// loopback (no namespaces, no root), and says what the run did with it
// on the run's log, so that the test reads its life in order.
const toySiteKind = "toy-loopback"

func init() {
	cellrun.RegisterSite(scenario.SiteKind{Kind: toySiteKind, Network: "toyland", Doc: "test only: this process's loopback",
		Flag: "nothing: it is always there"}, newToySite)
}

// toySiteRTTMs is the round trip the toy site reports for its path: a
// cell there must carry it as its rtt_ms.
const toySiteRTTMs = 7.25

type toySite struct {
	setup cellrun.SiteSetup
	// broken: its Open fails (a scenario whose name says so), to see
	// the site finished after a failed run.
	broken bool
}

func newToySite(setup cellrun.SiteSetup) (cellrun.Site, error) {
	return &toySite{setup: setup, broken: strings.Contains(setup.Scenario.Name, "broken")}, nil
}

func (s *toySite) say(format string, args ...any) {
	fmt.Fprintf(s.setup.Log, "toy: "+format+"\n", args...)
}

func (s *toySite) Start(context.Context) error { s.say("start"); return nil }

func (s *toySite) Note(m *results.Manifest) {
	s.say("note")
	m.Warnings = append(m.Warnings, "noted by the toy site")
}

func (s *toySite) Open(_ context.Context, spec cellrun.CellSpec, _ workload.Info) (*cellrun.Place, error) {
	s.say("open %s", spec.Cell.ID)
	p := &cellrun.Place{Hosts: loopbackHosts{}, Meter: cellrun.NoLinkMeter{}, CertIP: net.IPv4(127, 0, 0, 1), RTTMs: toySiteRTTMs,
		Close: func() error { s.say("close %s", spec.Cell.ID); return nil }}
	if s.broken {
		return p, errors.New("the toy site is broken")
	}
	return p, nil
}

func (s *toySite) Finish(completed bool) error { s.say("finish completed=%v", completed); return nil }

// toySiteLife is the toy site's lines of a run's log.
func toySiteLife(log string) []string {
	return regexp.MustCompile(`(?m)^toy: .*$`).FindAllString(log, -1)
}

// TestAToySiteRunsCells: a kind of site registered from a test file runs
// a scenario's cells. The run makes it with its factory and starts it
// once before any cell; each cell opens it and closes what it opened;
// its note is in the manifest; the run finishes it once, after the last
// cell, saying the run completed; and each row takes the site's round
// trip as rtt_ms.
func TestAToySiteRunsCells(t *testing.T) {
	src := "name: toy-site\nprofiles: [toyland]\nsites: {toyland: " + toySiteKind + "}\nprotocols: [tcp]\n" +
		"workload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\nrepetitions: 2\n"
	sc, err := scenario.Parse("toy-site.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	// Quality off: one attempt a cell, however busy the machine (a
	// disturbed cell would open the site again).
	out, err := Run{Scenario: sc, Out: filepath.Join(t.TempDir(), "run"), NoCalibration: true, NoReport: true, Log: &log, Quality: "off"}.Execute(context.Background())
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	defer out.Close()
	// Two repetitions: two cells, each opened and closed in turn.
	cells, _ := sc.Cells()
	want := []string{"toy: start", "toy: note"}
	for _, c := range cells {
		want = append(want, "toy: open "+c.ID, "toy: close "+c.ID)
	}
	want = append(want, "toy: finish completed=true")
	if got := toySiteLife(log.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the toy site's life:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(out.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(out.Rows))
	}
	for _, row := range out.Rows {
		if v := row.Float("rtt_ms"); v != toySiteRTTMs {
			t.Errorf("cell %s: rtt_ms %v, want the toy site's %v", row.Cell, v, toySiteRTTMs)
		}
		// count: 5 schedules five requests, each completed, failed or
		// left unsent (a busy machine may make the periodic workload
		// skip one); none fails over loopback.
		if n, e, u := row.Float("requests"), row.Float("errors"), row.Float("unsent"); n+e+u != 5 || e != 0 || n < 1 {
			t.Errorf("cell %s: %v requests, %v errors, %v unsent; want the 5 scheduled over loopback, none failed", row.Cell, n, e, u)
		}
	}
	m, err := results.ReadManifest(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(m.Warnings, "\n"), "noted by the toy site") {
		t.Errorf("the manifest lacks the site's note: %q", m.Warnings)
	}
}

// TestAToySiteIsFinishedAfterAFailedRun: a run whose cell could not open
// its site stops with that error, closes the place it got, and still
// finishes the site, saying the run did not complete.
func TestAToySiteIsFinishedAfterAFailedRun(t *testing.T) {
	src := "name: toy-site-broken\nprofiles: [toyland]\nsites: {toyland: " + toySiteKind + "}\nprotocols: [tcp]\n" +
		"workload: {type: periodic, interval: 10ms}\ncount: 5\nwarmup: 0s\n"
	sc, err := scenario.Parse("toy-site.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	out, err := Run{Scenario: sc, Out: filepath.Join(t.TempDir(), "run"), NoCalibration: true, NoReport: true, Log: &log, Quality: "off"}.Execute(context.Background())
	defer out.Close()
	if err == nil || !strings.Contains(err.Error(), "the toy site is broken") {
		t.Fatalf("err %v, want the site's", err)
	}
	cells, _ := sc.Cells()
	want := []string{"toy: start", "toy: note", "toy: open " + cells[0].ID, "toy: close " + cells[0].ID, "toy: finish completed=false"}
	if got := toySiteLife(log.String()); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the toy site's life:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
