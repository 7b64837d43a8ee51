package workload

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
	_ "tlab/internal/proto/all" // every protocol family registers itself

	"tlab/internal/proto"
	"tlab/internal/results"
)

// slowClient answers every exchange after a fixed service time. It stands
// in for a protocol to test the scheduler alone; the real stacks are tested
// through namespaces in package experiment.
type slowClient struct {
	service     time.Duration
	multiplexes bool
	// short is how many bytes fewer than asked it delivers.
	short       int
	inflight    atomic.Int32
	maxInflight atomic.Int32
}

func (c *slowClient) Exchange(ctx context.Context, req, resp int) (proto.Exchange, error) {
	n := c.inflight.Add(1)
	defer c.inflight.Add(-1)
	for {
		m := c.maxInflight.Load()
		if n <= m || c.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	ex := proto.Exchange{Start: time.Now(), ConnID: 1}
	select {
	case <-time.After(c.service):
	case <-ctx.Done():
		return ex, ctx.Err()
	}
	ex.FirstByte, ex.Done, ex.RespBytes = time.Now(), time.Now(), resp-c.short
	return ex, nil
}
func (c *slowClient) Multiplexes() bool { return c.multiplexes }
func (c *slowClient) Connections() int  { return 1 }
func (c *slowClient) Close() error      { return nil }

func run(t *testing.T, p Periodic, c proto.Client) []results.Record {
	t.Helper()
	var recs []results.Record
	if err := p.Drive(context.Background(), c, func(r results.Record) { recs = append(recs, r) }); err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestOpenLoopKeepsScheduleWhenTheClientMultiplexes(t *testing.T) {
	c := &slowClient{service: 30 * time.Millisecond, multiplexes: true}
	recs := run(t, Periodic{Interval: 10 * time.Millisecond, ReqSize: 1, RespSize: 1, Count: 40}, c)
	if len(recs) != 40 {
		t.Fatalf("%d records, want 40", len(recs))
	}
	// Requests overlap (service 30 ms, interval 10 ms). A send that waited
	// for the response before it would be late by 20 ms more at each
	// request (the 2nd by 20 ms, the 40th by 780 ms), so a bound of half
	// one service time tells the open loop from a queue behind responses
	// while a loaded host's wake-up tail (p99.9 ~2 ms, stalls of a few
	// ms) stays well inside it: the test asserts the schedule, not the
	// host's timing.
	worst := 0.0
	for _, r := range recs {
		worst = max(worst, r.LatenessMs)
	}
	if worst > 15 || c.maxInflight.Load() < 3 {
		t.Errorf("the latest send was %.1f ms late, at most %d in flight; want < 15 ms and >= 3 in flight", worst, c.maxInflight.Load())
	}
}

func TestSerialClientWaitsAndRecordsLateness(t *testing.T) {
	c := &slowClient{service: 25 * time.Millisecond}
	recs := run(t, Periodic{Interval: 10 * time.Millisecond, ReqSize: 1, RespSize: 1, Count: 20}, c)
	if c.maxInflight.Load() != 1 {
		t.Fatalf("a non-multiplexing client got %d overlapping exchanges", c.maxInflight.Load())
	}
	sent, unsent, maxLate := 0, 0, 0.0
	for _, r := range recs {
		if r.Error == ErrUnsent.Error() {
			unsent++
			continue
		}
		sent++
		maxLate = max(maxLate, r.LatenessMs)
	}
	if len(recs) != 20 || unsent == 0 || sent < 5 {
		t.Fatalf("%d records: %d sent, %d unsent", len(recs), sent, unsent)
	}
	// Serving takes 2.5 intervals: lateness grows by ~15 ms per request.
	if maxLate < 50 {
		t.Errorf("max lateness %.1f ms; a client 2.5x too slow falls far behind", maxLate)
	}
}

func TestWarmupIsMarkedAndHookRuns(t *testing.T) {
	c := &slowClient{service: time.Millisecond, multiplexes: true}
	hooked := 0
	p := Periodic{Interval: 5 * time.Millisecond, Count: 10, Warmup: 20 * time.Millisecond, OnWarmupEnd: func() { hooked++ }}
	recs := run(t, p, c)
	warm := 0
	for _, r := range recs {
		if r.Warmup {
			warm++
		}
	}
	if len(recs) != 14 || warm != 4 || hooked != 1 {
		t.Fatalf("%d records, %d warm-up, hook ran %d times; want 14, 4, 1", len(recs), warm, hooked)
	}
}

func TestValidate(t *testing.T) {
	for _, p := range []Periodic{{}, {Interval: time.Millisecond}, {Interval: time.Millisecond, Count: 1, ReqSize: -1}} {
		if p.Validate() == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}
