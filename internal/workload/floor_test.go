package workload

import (
	"testing"
	"time"
)

// oneWayOf is a topology's least one-way times between roles, given by
// hand.
func oneWayOf(legs map[[2]string]time.Duration) OneWay {
	return func(from, to string) (time.Duration, bool) {
		d, ok := legs[[2]string{from, to}]
		return d, ok
	}
}

// The floors of a request-response workload, by hand. With 7 ms each way
// (10 ms less 3 ms of uniform jitter) a response takes at least 14 ms:
// every delay percentile, the scheduled delay's and the mean are ≥ 14.
// The deadline share: a request misses when done − scheduled > period,
// so with a 25 ms period and a 25 ms round trip exactly a response may
// still be on time (floor 0); one nanosecond more each way and every
// request misses (floor 100); a 30 ms round trip against 25, 100.
func TestTheRequestResponseFloorsByHand(t *testing.T) {
	each := func(d time.Duration) OneWay {
		return oneWayOf(map[[2]string]time.Duration{{"client", "server"}: d, {"server", "client"}: d})
	}
	floor := Periodic{Interval: 25 * time.Millisecond}.Info().Floor
	if floor == nil {
		t.Fatal("periodic has no floor")
	}
	cases := []struct {
		metric string
		oneWay OneWay
		want   float64
		ok     bool
	}{
		{"delay_p99_ms", each(7 * time.Millisecond), 14, true},
		{"delay_p5_ms", each(7 * time.Millisecond), 14, true},
		{"sched_delay_p95_ms", each(7 * time.Millisecond), 14, true},
		{"delay_mean_ms", each(7 * time.Millisecond), 14, true},
		{"deadline_miss_pct", each(7 * time.Millisecond), 0, true},
		{"deadline_miss_pct", each(12500 * time.Microsecond), 0, true},
		{"deadline_miss_pct", each(12500*time.Microsecond + time.Nanosecond), 100, true},
		{"deadline_miss_pct", each(15 * time.Millisecond), 100, true},
		// No floor for what a round trip does not bound.
		{"delay_std_ms", each(7 * time.Millisecond), 0, false},
		{"delay_p50_ci_low_ms", each(7 * time.Millisecond), 0, false},
		{"conns_per_1000", each(7 * time.Millisecond), 0, false},
		// A leg without a floor: none.
		{"delay_p99_ms", oneWayOf(map[[2]string]time.Duration{{"client", "server"}: 7 * time.Millisecond}), 0, false},
	}
	for _, c := range cases {
		got, ok := floor(c.metric, c.oneWay)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %v, %v; want %v, %v", c.metric, got, ok, c.want, c.ok)
		}
	}
}

// The floor of a message's latency through a broker, by hand: 7 ms from
// the publisher to the broker and 9 ms from the broker to the subscriber
// are 16 ms, whatever the way back (the latency is one way); none for a
// figure that is not a latency, nor where a leg has no floor; none for a
// command stack, whose own records the proof does not cover.
func TestThePubSubFloorByHand(t *testing.T) {
	legs := oneWayOf(map[[2]string]time.Duration{
		{"publisher", "broker"}: 7 * time.Millisecond, {"broker", "subscriber"}: 9 * time.Millisecond,
		{"broker", "publisher"}: 50 * time.Millisecond, {"subscriber", "broker"}: 50 * time.Millisecond,
	})
	floor := PubSub{Pattern: PatternStopAndWait, Messages: 12}.Info().Floor
	for _, m := range []string{"message_latency_p95_ms", "message_latency_p50_ms", "message_latency_mean_ms"} {
		if got, ok := floor(m, legs); !ok || got != 16 {
			t.Errorf("%s: %v, %v; want 16, true", m, got, ok)
		}
	}
	if _, ok := floor("completion_ms", legs); ok {
		t.Error("completion_ms has a floor; none is proved")
	}
	half := oneWayOf(map[[2]string]time.Duration{{"publisher", "broker"}: 7 * time.Millisecond})
	if _, ok := floor("message_latency_p95_ms", half); ok {
		t.Error("a floor without the broker-subscriber leg's")
	}
	if (Command{Base: PubSub{Pattern: PatternStopAndWait, Messages: 12}}).Info().Floor != nil {
		t.Error("a command stack inherits its workload's floor")
	}
}
