package plan

import (
	"time"

	"tlab/internal/emu"
)

// Floor is the least value metric can take in the cell, proved from its
// links and its workload (workload.Info.Floor, over the topology's least
// one-way times between the hosts its roles play on:
// testbed.Topology.MinOneWay); ok is false where the workload proves
// nothing of the metric or a link on the way has no floor (a trace,
// jitter without a lower end, a timeline, reordering).
func (c Cell) Floor(metric string) (float64, bool) {
	info := c.Workload.Info()
	if info.Floor == nil || c.Site != "" {
		// A cell at another site (a real path, a cloud) crosses no
		// emulated link the proof could speak of.
		return 0, false
	}
	return info.Floor(metric, func(from, to string) (time.Duration, bool) {
		a, okA := c.Roles[from]
		b, okB := c.Roles[to]
		if !okA || !okB || len(c.Groups[from]) > 1 && from != to {
			// A role several hosts play (a shared access's stations):
			// the workload's recorded one is the first, but its floor
			// would need which one; none is claimed.
			return 0, false
		}
		return c.Topology.MinOneWay(a, b, emu.MinDataFrame)
	})
}
