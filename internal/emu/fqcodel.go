package emu

import (
	"math/rand/v2"
)

// FQ-CoDel: RFC 8290. Packets are hashed by flow into queues, each with
// its own CoDel; a deficit round robin serves them a quantum at a time,
// new (sparse) flows before old ones, so that a flow sending less than
// its share waits only for the packet on the wire. When the buffer is
// full it drops from the fattest flow, not the arrival.
const (
	FQCoDelName = "fq_codel"
	// Linux's defaults: 1024 flows, a quantum of one full frame, a
	// buffer of 10240 packets.
	fqDefaultFlows = 1024
	fqDefaultLimit = 10240
)

func init() {
	registerQdisc(QdiscKind{
		Name:                FQCoDelName,
		Doc:                 "flow queueing with CoDel per flow: 1024 flow queues served by deficit round robin (quantum 1514 bytes), new flows first; drops from the fattest flow when the buffer (10240 packets unless the profile gives one) is full",
		Source:              "RFC 8290 (Hoeiland-Joergensen, McKenney, Taht, Gettys, Dumazet, 2018), as Linux's sch_fq_codel runs it",
		Params:              []string{"target", "interval", "ecn", "flows", "quantum"},
		DefaultLimitPackets: fqDefaultLimit,
		New: func(c QueueConfig, limit Backlog, _ *rand.Rand) Qdisc {
			n, quantum := fqDefaultFlows, MaxFrame
			if c.Flows > 0 {
				n = c.Flows
			}
			if c.Quantum > 0 {
				quantum = int(c.Quantum)
			}
			q := &fqCodel{limit: limit, quantum: quantum, flows: make([]fqFlow, n)}
			for i := range q.flows {
				q.flows[i].codel = newCodelState(c)
			}
			return q
		},
	})
}

const (
	listNone = iota
	listNew
	listOld
)

type fqFlow struct {
	q       fifo
	codel   codelState
	deficit int
	list    int
}

// flowList is a queue of flow indices.
type flowList struct{ q queue[int] }

func (l *flowList) len() int { return l.q.len() }

func (l *flowList) front() int { return *l.q.front() }

func (l *flowList) popFront() { l.q.pop() }

func (l *flowList) push(i int) { l.q.push(i) }

type fqCodel struct {
	flows              []fqFlow
	newFlows, oldFlows flowList
	quantum            int
	limit              Backlog
	n                  int
}

func (f *fqCodel) Enqueue(_ int64, p Packet, backlog Backlog, drop func(Packet)) {
	i := int(p.Flow % uint32(len(f.flows)))
	fl := &f.flows[i]
	fl.q.push(p)
	f.n++
	if fl.list == listNone {
		fl.list, fl.deficit = listNew, f.quantum
		f.newFlows.push(i)
	}
	backlog.Packets++
	backlog.Bytes += int64(p.Size)
	for over(Backlog{Packets: backlog.Packets - 1, Bytes: backlog.Bytes - int64(p.Size)}, f.limit, p.Size) && f.n > 0 {
		// The buffer is full: drop from the head of the fattest flow.
		fat := 0
		for j := range f.flows {
			if f.flows[j].q.bytes > f.flows[fat].q.bytes {
				fat = j
			}
		}
		x, _ := f.flows[fat].q.pop()
		f.n--
		backlog.Packets--
		backlog.Bytes -= int64(x.Size)
		drop(x)
	}
}

func (f *fqCodel) Dequeue(now int64, drop func(Packet)) (Packet, bool) {
	for {
		list := &f.newFlows
		if list.len() == 0 {
			list = &f.oldFlows
		}
		if list.len() == 0 {
			return Packet{}, false
		}
		i := list.front()
		fl := &f.flows[i]
		if fl.deficit <= 0 {
			fl.deficit += f.quantum
			list.popFront()
			f.oldFlows.push(i)
			fl.list = listOld
			continue
		}
		before := fl.q.len()
		p, ok := fl.codel.dequeue(now, &fl.q, drop)
		f.n -= before - fl.q.len()
		if !ok {
			list.popFront()
			// An emptied new flow goes to the old list once, so that it
			// cannot come back as new at once and starve the others.
			if list == &f.newFlows && f.oldFlows.len() > 0 {
				f.oldFlows.push(i)
				fl.list = listOld
			} else {
				fl.list = listNone
			}
			continue
		}
		fl.deficit -= p.Size
		return p, true
	}
}

func (f *fqCodel) Len() int { return f.n }
