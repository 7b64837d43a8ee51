package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/emu"
	"tlab/internal/testbed"
	"tlab/internal/units"
)

// A cell whose link steps its delay writes link-events.csv, each change
// with its time in the measured window; a cell without a timeline writes
// none.
func TestWriteLinkEventsAlignsWithTheWindow(t *testing.T) {
	step := units.Duration(80 * time.Millisecond)
	cfg := emu.LinkConfig{Up: emu.DirectionConfig{Delay: units.Duration(10 * time.Millisecond),
		Timeline: emu.Timeline{Steps: []emu.TimelineStep{{At: units.Duration(3 * time.Second), Delay: &step}}}}}
	dir := t.TempDir()
	topo := testbed.Topology{Hosts: []string{"client", "server"}, Links: []testbed.Link{{Name: "access", A: []string{"client"}, B: []string{"server"}, Config: cfg}}}
	// The window started 1.2 s after the link, at 1 700 000 000 s by the
	// wall clock: the step at 3 s is 1.8 s into the window, at
	// 1 700 000 001.8 s (1700000001800000000 ns), the start 1.2 s before
	// the window, at 1 699 999 998.8 s.
	if err := cellrun.WriteLinkEvents(dir, topo, nil, 1200*time.Millisecond, 10*time.Second, 1_700_000_000_000_000_000); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, emu.LinkEventsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"access,up,start,0,-1200,0,10,", "access,up,step,3000,1800,0,80,", ",1699999998800000000\n", ",1700000001800000000\n"} {
		if !strings.Contains(string(data), row) {
			t.Errorf("no row %q in\n%s", row, data)
		}
	}
	plain := t.TempDir()
	topo.Links[0].Config = emu.LinkConfig{}
	if err := cellrun.WriteLinkEvents(plain, topo, nil, 0, time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plain, emu.LinkEventsFile)); !os.IsNotExist(err) {
		t.Errorf("a cell without a timeline has a link-events file: %v", err)
	}
}

// liveMeter is an emulator that kept live changes.
type liveMeter struct {
	cellrun.Meter
	events []emu.LinkEvent
}

func (m liveMeter) LiveEvents() []emu.LinkEvent { return m.events }

// A live change is written among the timeline's events, in time order,
// also on a link without a timeline.
func TestWriteLinkEventsKeepsLiveChanges(t *testing.T) {
	step := units.Duration(80 * time.Millisecond)
	topo := testbed.Topology{Hosts: []string{"client", "server"}, Links: []testbed.Link{{Name: "access", A: []string{"client"}, B: []string{"server"},
		Config: emu.LinkConfig{Up: emu.DirectionConfig{Timeline: emu.Timeline{Steps: []emu.TimelineStep{{At: units.Duration(3 * time.Second), Delay: &step}}}}}}}}
	live := emu.LinkEvent{Link: "access", Direction: "down", Source: emu.EventLive, At: 2 * time.Second, State: emu.TimelineState{Loss: 0.05}}
	dir := t.TempDir()
	if err := cellrun.WriteLinkEvents(dir, topo, liveMeter{events: []emu.LinkEvent{live}}, 0, 10*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, emu.LinkEventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	// Header, the start (0 s), the live change (2 s), the step (3 s).
	if len(lines) != 4 || !strings.HasPrefix(lines[2], "access,down,live,2000,2000,0,0,0,5,") || !strings.HasPrefix(lines[3], "access,up,step,3000,") {
		t.Errorf("link-events.csv:\n%s", data)
	}
	// A link without a timeline changed live has its file too.
	topo.Links[0].Config = emu.LinkConfig{}
	plain := t.TempDir()
	if err := cellrun.WriteLinkEvents(plain, topo, liveMeter{events: []emu.LinkEvent{live}}, 0, time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plain, emu.LinkEventsFile)); err != nil {
		t.Errorf("a live change and no file: %v", err)
	}
}
