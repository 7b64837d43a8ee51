package emu

// Queue decides whether a packet may join a direction's queue: the
// queue discipline. The direction keeps the backlog (packets admitted and
// not yet fully transmitted) and asks the queue about each arrival; an AQM
// (RED, CoDel, PIE) is one more implementation in a file of its own,
// seeded from the direction's generator like every other model.
type Queue interface {
	// Admit tells whether a packet of size bytes arriving at now (ns on
	// the link clock) joins a backlog of backlogPackets packets and
	// backlogBytes bytes, whose oldest packet has waited headWaitNs.
	Admit(now int64, size, backlogPackets int, backlogBytes, headWaitNs int64) bool
}

// DropTail admits every packet that fits within its limits and drops the
// arrival otherwise. A zero limit does not bind.
type DropTail struct {
	LimitPackets int
	LimitBytes   int64
}

// Admit implements Queue.
func (q DropTail) Admit(_ int64, size, backlogPackets int, backlogBytes, _ int64) bool {
	if q.LimitPackets > 0 && backlogPackets+1 > q.LimitPackets {
		return false
	}
	return q.LimitBytes <= 0 || backlogBytes+int64(size) <= q.LimitBytes
}
