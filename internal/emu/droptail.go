package emu

import "math/rand/v2"

// DropTailName is the default discipline: first in, first out, and an
// arrival that does not fit the buffer is dropped.
const DropTailName = "droptail"

func init() {
	registerQdisc(QdiscKind{
		Name:   DropTailName,
		Doc:    "first in, first out; an arrival that does not fit the buffer is dropped (the buffer is the profile's, one bandwidth-delay product by default)",
		Source: "the classic router queue; the bufferbloat it causes: Gettys and Nichols, Bufferbloat: Dark Buffers in the Internet, ACM Queue 9(11), 2011",
		New:    func(_ QueueConfig, limit Backlog, _ *rand.Rand) Qdisc { return &dropTail{limit: limit} },
	})
}

type dropTail struct {
	q     fifo
	limit Backlog
}

func (d *dropTail) Enqueue(_ int64, p Packet, backlog Backlog, drop func(Packet)) {
	if over(backlog, d.limit, p.Size) {
		drop(p)
		return
	}
	d.q.push(p)
}

func (d *dropTail) Dequeue(int64, func(Packet)) (Packet, bool) { return d.q.pop() }

func (d *dropTail) Len() int { return d.q.len() }
