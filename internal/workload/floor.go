package workload

import "time"

// OneWay is the least time a message takes from the host of one of a
// workload's roles to the host of another, over the cell's emulated links
// (testbed.Topology.MinOneWay, for frames of at least emu.MinDataFrame
// bytes); ok is false where the links prove none. A workload's Info.Floor
// turns it into the least value of its metrics (floor_*.go), one proof per
// workload family; a workload without a proof has no Floor.
type OneWay func(from, to string) (time.Duration, bool)

// path sums the least one-way times along roles, in order (a message
// that crosses from each to the next, as a request, its response, or a
// message relayed by a broker): ok only if every leg has one.
func (w OneWay) path(roles ...string) (time.Duration, bool) {
	var sum time.Duration
	for i := 0; i+1 < len(roles); i++ {
		d, ok := w(roles[i], roles[i+1])
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, true
}
