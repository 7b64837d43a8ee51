package cellrun

import (
	"cmp"
	"io"
	"path/filepath"
	"slices"
	"time"

	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/testbed"
)

// liveEvents is an emulator that kept the live changes made to its links
// (*emu.Process).
type liveEvents interface{ LiveEvents() []emu.LinkEvent }

// writeLinkEvents writes the cell's link-events.csv into dir when a link
// of its topology has a timeline or was changed live (tlab link set, as
// m, the place's meter, kept them): every change from the link's start
// to linkEnd (the link clock when the cell ended), each with its time in
// the measured window, which started at windowStart on the link clock and
// at windowStartUnix (ns) on the host's wall clock: each event gets its
// wall-clock time too, the clock of records' sent_unix_ns.
func WriteLinkEvents(dir string, topo testbed.Topology, m Meter, windowStart, linkEnd time.Duration, windowStartUnix int64) error {
	var events []emu.LinkEvent
	for _, l := range topo.Links {
		events = append(events, l.Config.Up.TimelineEvents(l.Name, "up", linkEnd)...)
		events = append(events, l.Config.Down.TimelineEvents(l.Name, "down", linkEnd)...)
	}
	if le, ok := m.(liveEvents); ok {
		live := le.LiveEvents()
		events = append(events, live...)
		// In time order: a live change among the timeline's steps.
		slices.SortStableFunc(events, func(a, b emu.LinkEvent) int { return cmp.Compare(a.At, b.At) })
	}
	if len(events) == 0 || dir == "" {
		return nil
	}
	if windowStartUnix > 0 {
		for i := range events {
			events[i].UnixNs = windowStartUnix + int64(events[i].At-windowStart)
		}
	}
	return results.WriteAtomic(filepath.Join(dir, emu.LinkEventsFile), func(w io.Writer) error {
		return emu.WriteLinkEvents(w, events, windowStart)
	})
}
