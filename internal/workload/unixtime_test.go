package workload

import (
	"testing"
	"time"

	"tlab/internal/proto"
)

// TestRecordsCarryTheirWallClockTime: a record's sent_unix_ns is the
// clock's origin by the wall clock plus the time since it, so that records
// line up with a capture. Origin 1700000000 s + 500 ns after the epoch,
// sent 1.25 ms later: 1700000000_000000500 + 1_250_000 =
// 1700000000001250500 ns, whether the exchange completed or failed.
func TestRecordsCarryTheirWallClockTime(t *testing.T) {
	c := &clock{base: time.Unix(1700000000, 500)}
	const want = int64(1700000000001250500)
	if r := c.record(3, 1250*time.Microsecond, 256, proto.Exchange{Done: c.base.Add(2 * time.Millisecond)}, nil); r.SentUnixNs != want {
		t.Errorf("completed: sent_unix_ns %d, want %d", r.SentUnixNs, want)
	}
	if r := c.record(4, 1250*time.Microsecond, 256, proto.Exchange{}, errTest); r.SentUnixNs != want {
		t.Errorf("failed: sent_unix_ns %d, want %d", r.SentUnixNs, want)
	}
}

type testError struct{}

func (testError) Error() string { return "timeout" }

var errTest error = testError{}
