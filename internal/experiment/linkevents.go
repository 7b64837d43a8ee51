package experiment

import (
	"io"
	"path/filepath"
	"time"

	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/testbed"
)

// writeLinkEvents writes the cell's link-events.csv into dir when a link
// of its topology has a timeline: every change from the link's start to
// linkEnd (the link clock when the cell ended), each with its time in the
// measured window, which started at windowStart on the link clock.
func writeLinkEvents(dir string, topo testbed.Topology, windowStart, linkEnd time.Duration) error {
	var events []emu.LinkEvent
	for _, l := range topo.Links {
		events = append(events, l.Config.Up.TimelineEvents(l.Name, "up", linkEnd)...)
		events = append(events, l.Config.Down.TimelineEvents(l.Name, "down", linkEnd)...)
	}
	if len(events) == 0 || dir == "" {
		return nil
	}
	return results.WriteAtomic(filepath.Join(dir, emu.LinkEventsFile), func(w io.Writer) error {
		return emu.WriteLinkEvents(w, events, windowStart)
	})
}
