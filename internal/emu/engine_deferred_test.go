package emu

import (
	"math"
	"testing"
	"time"

	"tlab/internal/units"
)

// TestReadHoldOnlyWhereNoModelCanShortenIt: a frame may be read late only
// on a direction that holds every frame for at least its delay whatever
// the models draw, and whose verdict does not depend on when the frame
// was read. By hand from the models (direction.go): a rate limit or a
// trace puts frames in a queue whose backlog at arrival decides drops
// (read late, the backlog has drained further); jitter may release a
// frame before its delay; reordering releases it at once. Loss,
// duplication and corruption are drawn per arrival and change no time.
func TestReadHoldOnlyWhereNoModelCanShortenIt(t *testing.T) {
	ten := units.Duration(10 * time.Millisecond)
	for _, c := range []struct {
		name string
		cfg  DirectionConfig
		want int64
	}{
		{"delay alone", DirectionConfig{Delay: ten}, 10_000_000},
		{"delay and loss, duplicates, corruption", DirectionConfig{Delay: ten, Loss: LossConfig{Model: LossBernoulli, Rate: 0.1}, Duplicate: 0.01, Corrupt: 0.01}, 10_000_000},
		{"no delay", DirectionConfig{}, 0},
		{"a rate limit", DirectionConfig{Delay: ten, Rate: 10e6}, 0},
		{"jitter", DirectionConfig{Delay: ten, Jitter: units.Duration(time.Millisecond)}, 0},
		{"reordering", DirectionConfig{Delay: ten, Reorder: 0.01}, 0},
		// A step to 1 ms at 2 s: a frame arriving then is due 1 ms later,
		// sooner than a 10 ms hold would read it.
		{"a timeline", DirectionConfig{Delay: ten, Timeline: Timeline{Steps: []TimelineStep{{At: units.Duration(2 * time.Second), Delay: ptrTo(units.Duration(time.Millisecond))}}}}, 0},
	} {
		d, err := NewDirection(c.cfg, 0, 1, "test/up", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := readHoldNs(d); got != c.want {
			t.Errorf("%s: hold %d ns, want %d", c.name, got, c.want)
		}
	}
	// A live change is a timeline from then on: no hold after it.
	d, err := NewDirection(DirectionConfig{Delay: ten}, 0, 1, "test/up", nil)
	if err != nil {
		t.Fatal(err)
	}
	one := units.Duration(time.Millisecond)
	if err := d.Set(5_000_000, TimelineStep{Delay: &one}); err != nil {
		t.Fatal(err)
	}
	if got := readHoldNs(d); got != 0 {
		t.Errorf("after a live change to 1 ms: hold %d ns, want 0", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestReadDeadline: with a 10 ms hold and the rings last found empty at
// 3 ms, a frame not yet read arrived after 3 ms and is due after 13 ms,
// so the loop must read by 13 ms; with nothing in the delay line the next
// arrival is the next event (no deadline: block on the rings); a hold
// under twice the longest spin (500 µs) is not worth deferring (read at
// once: a deadline in the past).
func TestReadDeadline(t *testing.T) {
	for _, c := range []struct {
		name     string
		lastRead int64
		hold     int64
		waiting  bool
		want     int64
	}{
		{"10 ms hold, frames waiting", 3_000_000, 10_000_000, true, 13_000_000},
		{"10 ms hold, nothing waiting", 3_000_000, 10_000_000, false, math.MaxInt64},
		{"500 µs hold, the shortest deferred", 3_000_000, 500_000, true, 3_500_000},
		{"499.999 µs hold", 3_000_000, 499_999, true, math.MinInt64},
		{"no hold", 3_000_000, 0, true, math.MinInt64},
		{"no hold, nothing waiting", 3_000_000, 0, false, math.MinInt64},
	} {
		if got := readDeadline(c.lastRead, c.hold, c.waiting); got != c.want {
			t.Errorf("%s: deadline %d, want %d", c.name, got, c.want)
		}
	}
}
