package testbed

import (
	"slices"
	"time"
)

// MinOneWay is the least time a message takes from host from to host to
// (both hosts of the topology): the sum, over the links of the one path
// between them, of the least time a frame of frameBytes takes to cross
// the direction it crosses (emu.DirectionConfig.MinOneWay: Up from a
// link's side A to side B, Down back). A message that is whole at to has
// had its last frame cross each of those directions after it was sent,
// one after the other (a host forwards what it received), so it cannot be
// whole sooner. 0 and true when from is to (nothing to cross).
//
// ok is false where that path is not one: a multi-homed host (its route
// moves between links), hosts on the same side of one link (a shared
// access's stations reach each other without the emulator), no path, or
// more than one (the least of them would need the routes); and where a
// direction on it has no floor.
func (t Topology) MinOneWay(from, to string, frameBytes int) (time.Duration, bool) {
	if from == to {
		return 0, slices.Contains(t.Hosts, from)
	}
	if t.MultiHome != nil {
		return 0, false
	}
	var paths [][]hop
	var walk func(at string, used []bool, path []hop)
	walk = func(at string, used []bool, path []hop) {
		if at == to {
			paths = append(paths, slices.Clone(path))
			return
		}
		for li, l := range t.Links {
			if used[li] {
				continue
			}
			for _, dir := range []struct {
				from, to []string
				up       bool
			}{{l.A, l.B, true}, {l.B, l.A, false}} {
				if !slices.Contains(dir.from, at) {
					continue
				}
				for _, next := range dir.to {
					used[li] = true
					walk(next, used, append(path, hop{link: li, up: dir.up}))
					used[li] = false
				}
			}
		}
	}
	walk(from, make([]bool, len(t.Links)), nil)
	if len(paths) != 1 {
		return 0, false
	}
	var sum time.Duration
	for _, h := range paths[0] {
		cfg := t.Links[h.link].Config.Down
		if h.up {
			cfg = t.Links[h.link].Config.Up
		}
		d, ok := cfg.MinOneWay(frameBytes)
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, true
}

// hop is one link crossed, and which way.
type hop struct {
	link int
	up   bool
}
