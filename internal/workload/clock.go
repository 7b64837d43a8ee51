package workload

// The clock every workload times its events with: Go's monotonic time for
// stamps, CLOCK_MONOTONIC with clock_nanosleep for schedules.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"
	"tlab/internal/proto"
	"tlab/internal/results"

	"golang.org/x/sys/unix"
)

// clock relates Go's monotonic time to CLOCK_MONOTONIC, so that a locked
// thread can sleep to absolute times with clock_nanosleep.
type clock struct {
	base     time.Time
	baseMono int64 // CLOCK_MONOTONIC at base, ns
}

func newClock() (*clock, error) {
	var ts unix.Timespec
	base := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil, fmt.Errorf("clock: %w", err)
	}
	return &clock{base: base, baseMono: ts.Nano()}, nil
}

func (c *clock) since() time.Duration { return time.Since(c.base) }

// unixNs is the wall-clock time d after the clock's origin, in ns since
// the UNIX epoch: the origin read from the wall clock once, d from the
// monotonic clock.
func (c *clock) unixNs(d time.Duration) int64 { return c.base.UnixNano() + int64(d) }
func (c *clock) at(t time.Time) time.Duration { return t.Sub(c.base) }

// record turns what a client observed of an exchange sent at sent into a
// record.
func (c *clock) record(seq int, sent time.Duration, reqSize int, ex proto.Exchange, err error) results.Record {
	r := results.Record{
		Seq: seq, SentMs: ms(sent), SentUnixNs: c.unixNs(sent), ReqBytes: reqSize, RespBytes: ex.RespBytes,
		ConnID: ex.ConnID, NewConn: ex.NewConn, ConnectMs: ms(ex.Connect), HandshakeMs: ms(ex.Handshake),
		Resumed: ex.Resumed, EarlyData: ex.EarlyData,
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	done := c.at(ex.Done)
	r.DoneMs, r.DelayMs = ms(done), ms(done-sent)
	if !ex.FirstByte.IsZero() {
		r.FirstByteMs = ms(c.at(ex.FirstByte) - sent)
	}
	return r
}

// run calls fn on a locked OS thread with the finest timer slack.
func (c *clock) run(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		// Timer slack is per thread; restore the default before the
		// thread goes back to the pool.
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0)
		errc <- fn()
	}()
	return <-errc
}

// sleepUntil sleeps to offset after the clock's base, waking every 100 ms
// to notice cancellation.
func (c *clock) sleepUntil(ctx context.Context, offset time.Duration) error {
	target := c.baseMono + offset.Nanoseconds()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var now unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
		left := target - now.Nano()
		if left <= 0 {
			return nil
		}
		wake := target
		if left > int64(100*time.Millisecond) {
			wake = now.Nano() + int64(100*time.Millisecond)
		}
		ts := unix.NsecToTimespec(wake)
		if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("clock_nanosleep: %w", err)
		}
	}
}
