package emu

// queue is a first-in-first-out ring of T that doubles when full: push and
// pop cost O(1) whatever the backlog (a slice shifted down when its front
// is consumed would copy the whole backlog again and again under a
// standing queue), and in steady state it allocates nothing.
type queue[T any] struct {
	buf  []T // len is zero or a power of two
	head int
	n    int
}

func (q *queue[T]) len() int { return q.n }

func (q *queue[T]) push(v T) {
	if q.n == len(q.buf) {
		grown := make([]T, max(2*len(q.buf), 16))
		k := copy(grown, q.buf[q.head:])
		copy(grown[k:], q.buf[:q.head])
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = v
	q.n++
}

// pop removes the front; ok is false when the queue is empty.
func (q *queue[T]) pop() (v T, ok bool) {
	if q.n == 0 {
		return v, false
	}
	v = q.buf[q.head]
	var zero T
	q.buf[q.head] = zero // let go of what it refers to
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return v, true
}

// front is the oldest element, in place; nil when empty.
func (q *queue[T]) front() *T {
	if q.n == 0 {
		return nil
	}
	return &q.buf[q.head]
}

// back is the newest element, in place; nil when empty.
func (q *queue[T]) back() *T {
	if q.n == 0 {
		return nil
	}
	return &q.buf[(q.head+q.n-1)&(len(q.buf)-1)]
}
