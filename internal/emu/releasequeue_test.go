package emu

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReleaseQueueOrder pushes frames from several sources, each mostly in
// release order with some frames jumping ahead (jitter, reordering), pops
// them at an advancing clock, and checks, for both designs, that every
// frame leaves once, never before its release, and always as the earliest
// of the frames then waiting by (release, seq).
func TestReleaseQueueOrder(t *testing.T) {
	for _, heapOnly := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(7, 11))
		const sources = 4
		q := newReleaseQueue(sources, heapOnly)
		waiting := map[int]pending{}
		pushed, popped := 0, 0
		lastRelease := make([]int64, sources)
		pop := func(now int64) bool {
			p, ok := q.popDue(now)
			if !ok {
				return false
			}
			w, ok := waiting[p.n]
			if !ok {
				t.Fatalf("heapOnly=%v: frame %d popped but not waiting", heapOnly, p.n)
			}
			if p.release > now {
				t.Fatalf("heapOnly=%v: frame due at %d released at %d", heapOnly, p.release, now)
			}
			for _, o := range waiting {
				if o.before(&w) {
					t.Fatalf("heapOnly=%v: frame %d (release %d, seq %d) left before frame %d (release %d, seq %d)", heapOnly, w.n, w.release, w.seq, o.n, o.release, o.seq)
				}
			}
			delete(waiting, p.n)
			popped++
			return true
		}
		now := int64(0)
		for step := 0; step < 5000; step++ {
			now += rng.Int64N(50)
			for k := rng.IntN(4); k > 0; k-- {
				src := rng.IntN(sources)
				rel := max(now+1000, lastRelease[src]+rng.Int64N(30))
				if rng.IntN(10) == 0 {
					rel = now + rng.Int64N(2000) // out of its line's order
				}
				lastRelease[src] = max(lastRelease[src], rel)
				p := pending{release: rel, n: pushed}
				q.push(src, p)
				p.seq = q.seq
				waiting[p.n] = p
				pushed++
			}
			for pop(now) {
			}
			if next, ok := q.next(); ok && next <= now {
				t.Fatalf("heapOnly=%v: next %d is due at %d but was not popped", heapOnly, next, now)
			}
		}
		for pop(1 << 62) {
		}
		if q.Len() != 0 || popped != pushed || len(waiting) != 0 {
			t.Fatalf("heapOnly=%v: popped %d of %d, %d left", heapOnly, popped, pushed, q.Len())
		}
		if heapOnly && len(q.heap) != 0 {
			t.Fatalf("heap still holds %d", len(q.heap))
		}
	}
}

// TestReleaseQueueInOrderUsesLines checks the point of the design: frames
// that arrive in their source's release order never touch the heap, and a
// frame that jumps ahead does.
func TestReleaseQueueInOrderUsesLines(t *testing.T) {
	q := newReleaseQueue(2, false)
	for i := range 1000 {
		q.push(i%2, pending{release: int64(1000 + i)})
	}
	if len(q.heap) != 0 {
		t.Fatalf("%d in-order frames went to the heap", len(q.heap))
	}
	q.push(0, pending{release: 5})
	if len(q.heap) != 1 {
		t.Fatalf("a frame released before its line's tail: heap holds %d, want 1", len(q.heap))
	}
	p, ok := q.popDue(5)
	if !ok || p.release != 5 {
		t.Fatalf("the early frame: got %+v, %v", p, ok)
	}
	if _, ok := q.popDue(999); ok {
		t.Fatal("a frame due at 1000 left at 999")
	}
	p, _ = q.popDue(1000)
	if p.release != 1000 {
		t.Fatalf("next frame released at %d, want 1000", p.release)
	}
}

// TestReleaseQueueEqualTimesFIFO checks frames due at the same time leave
// in the order they were pushed, across sources and the heap.
func TestReleaseQueueEqualTimesFIFO(t *testing.T) {
	q := newReleaseQueue(2, false)
	q.push(0, pending{release: 100, n: 0})
	q.push(1, pending{release: 100, n: 1})
	q.push(0, pending{release: 50, n: 2}) // heap
	q.push(1, pending{release: 100, n: 3})
	q.push(0, pending{release: 100, n: 4}) // line 0: equal to its tail
	var order []int
	for {
		p, ok := q.popDue(100)
		if !ok {
			break
		}
		order = append(order, p.n)
	}
	if want := []int{2, 0, 1, 3, 4}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
}

// TestQueueGrowsAcrossWrap fills a queue past its capacity while its head
// has wrapped, and checks nothing is lost or reordered.
func TestQueueGrowsAcrossWrap(t *testing.T) {
	var q queue[int]
	next, want := 0, 0
	popOne := func() {
		t.Helper()
		if f := q.front(); f == nil || *f != want {
			t.Fatalf("front %v, want %d", f, want)
		}
		if v, ok := q.pop(); !ok || v != want {
			t.Fatalf("popped %d, %v, want %d", v, ok, want)
		}
		want++
	}
	for round := 0; round < 6; round++ {
		for range 10 + 17*round {
			q.push(next)
			if b := q.back(); *b != next {
				t.Fatalf("back %d, want %d", *b, next)
			}
			next++
		}
		for range 9 + 5*round {
			popOne()
		}
	}
	for q.len() > 0 {
		popOne()
	}
	if want != next {
		t.Fatalf("popped %d of %d", want, next)
	}
	if _, ok := q.pop(); ok || q.front() != nil || q.back() != nil {
		t.Fatal("an empty queue gave an element")
	}
}
