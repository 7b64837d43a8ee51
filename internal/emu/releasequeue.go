package emu

// pending is a frame waiting for its release time.
type pending struct {
	release int64
	seq     uint64 // arrival order, to keep equal release times FIFO
	buf     []byte // a pool buffer, full capacity
	n       int
	link    int32
	dir     int8
	out     int32 // port index, or -1 to flood the other side
}

// before orders pending frames by release time, then by arrival.
func (p *pending) before(q *pending) bool {
	return p.release < q.release || (p.release == q.release && p.seq < q.seq)
}

// releaseQueue holds the frames that wait for their release, and gives
// them back in (release, seq) order.
//
// A direction releases its frames in order unless jitter may reorder them
// or netem-style reordering lets one skip the line, so most frames join
// their source's first-in-first-out line at its tail, in O(1), and leave
// from its head in O(1). A frame released before the tail of its source's
// line goes to a heap shared by all sources instead, so any order stays
// correct. The next frame is the earliest of the lines' heads and the
// heap's top: a scan over the sources (two a link), never over the frames
// waiting.
//
// With heapOnly every frame goes to the heap: the engine's first design,
// kept selectable to compare against.
type releaseQueue struct {
	heapOnly bool
	lines    []queue[pending]
	heap     pendingHeap
	seq      uint64
}

// newReleaseQueue makes a queue for sources numbered 0..sources-1.
func newReleaseQueue(sources int, heapOnly bool) *releaseQueue {
	return &releaseQueue{heapOnly: heapOnly, lines: make([]queue[pending], sources)}
}

// Len is how many frames wait.
func (q *releaseQueue) Len() int {
	n := len(q.heap)
	for i := range q.lines {
		n += q.lines[i].len()
	}
	return n
}

// push adds a frame from source src; it is numbered after every frame
// pushed before it.
func (q *releaseQueue) push(src int, p pending) {
	q.seq++
	p.seq = q.seq
	if !q.heapOnly {
		l := &q.lines[src]
		if tail := l.back(); tail == nil || tail.release <= p.release {
			l.push(p)
			return
		}
	}
	q.heap.push(p)
}

// next returns the earliest frame's release time; ok is false when none
// waits.
func (q *releaseQueue) next() (release int64, ok bool) {
	if p, _ := q.earliest(); p != nil {
		return p.release, true
	}
	return 0, false
}

// popDue removes and returns the earliest frame if it is due by now.
func (q *releaseQueue) popDue(now int64) (pending, bool) {
	p, line := q.earliest()
	if p == nil || p.release > now {
		return pending{}, false
	}
	if line < 0 {
		return q.heap.pop(), true
	}
	return q.lines[line].pop()
}

// earliest is the earliest waiting frame (nil when none) and the line it
// heads, or -1 for the heap.
func (q *releaseQueue) earliest() (*pending, int) {
	var best *pending
	from := -1
	if len(q.heap) > 0 {
		best = &q.heap[0]
	}
	for i := range q.lines {
		if h := q.lines[i].front(); h != nil && (best == nil || h.before(best)) {
			best, from = h, i
		}
	}
	return best, from
}

// pendingHeap is a min-heap of pending frames by (release, seq). It is
// written out rather than built on container/heap to keep the hot path
// free of interface conversions and allocations.
type pendingHeap []pending

func (h *pendingHeap) push(p pending) {
	*h = append(*h, p)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].before(&s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *pendingHeap) pop() pending {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = pending{}
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l].before(&s[m]) {
			m = l
		}
		if r < len(s) && s[r].before(&s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
