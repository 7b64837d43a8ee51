package plan

import (
	"math"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/testbed"
	"tlab/internal/units"
	"tlab/internal/workload"
)

// A hand-written cell's floors. Study A's shape: a client and a server
// joined by a link of 10 ms each way with uniform jitter of half-width
// 3 ms, 100 Mbit/s each way: a response takes at least 2·(7 ms + 3.359
// µs) = 14.006718 ms (each crossing's least frame, 42 B at 100 Mbit/s, is
// 3.36 µs less the 1 ns rounding). Study D's shape: a chain publisher –
// broker – subscriber of two 20 Mbit/s links of 25 ms each way without
// jitter (a profile of 50 ms RTT): a message takes at least 2·(25 ms +
// 16.799 µs) = 50.033598 ms (42 B at 20 Mbit/s: 16.8 µs, less 1 ns). A
// trace or normal jitter on the way, or a cell at another site (no
// emulated link): no floor.
func TestACellsFloorsByHand(t *testing.T) {
	ms := func(v float64) units.Duration { return units.Duration(v * float64(time.Millisecond)) }
	jittery := emu.DirectionConfig{Delay: ms(10), Jitter: ms(3), Rate: 100e6}
	a := Cell{Topology: testbed.ClientServer(emu.LinkConfig{Up: jittery, Down: jittery}),
		Roles: map[string]string{"client": "client", "server": "server"}, Workload: workload.Periodic{Interval: 25 * time.Millisecond}}
	wifi := emu.DirectionConfig{Delay: ms(25), Rate: 20e6}
	chain, err := testbed.Chain(workload.PubSubRoles, []emu.LinkConfig{{Up: wifi, Down: wifi}, {Up: wifi, Down: wifi}})
	if err != nil {
		t.Fatal(err)
	}
	d := Cell{Topology: chain, Roles: map[string]string{"publisher": "publisher", "broker": "broker", "subscriber": "subscriber"},
		Workload: workload.PubSub{Pattern: workload.PatternStopAndWait, Messages: 12}}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if got, ok := a.Floor("delay_p99_ms"); !ok || !near(got, 14.006718) {
		t.Errorf("study A's cell: delay_p99_ms floor %v, %v; want 14.006718 ms", got, ok)
	}
	// 14.006718 ms against a 25 ms period: responses may be on time.
	if got, ok := a.Floor("deadline_miss_pct"); !ok || got != 0 {
		t.Errorf("study A's cell: deadline_miss_pct floor %v, %v; want 0 (14 ms < 25 ms)", got, ok)
	}
	// The same link at 12.5 ms each way, no jitter: 25 ms + 6.718 µs >
	// the 25 ms period, strictly: every request misses.
	exact := emu.DirectionConfig{Delay: ms(12.5), Rate: 100e6}
	a.Topology = testbed.ClientServer(emu.LinkConfig{Up: exact, Down: exact})
	if got, ok := a.Floor("deadline_miss_pct"); !ok || got != 100 {
		t.Errorf("a 25 ms RTT against a 25 ms period: floor %v, %v; want 100", got, ok)
	}
	if got, ok := d.Floor("message_latency_p95_ms"); !ok || !near(got, 50.033598) {
		t.Errorf("study D's cell: message_latency_p95_ms floor %v, %v; want 50.033598 ms", got, ok)
	}
	d.Site = "remote"
	if got, ok := d.Floor("message_latency_p95_ms"); ok {
		t.Errorf("a cell at another site: floor %v; want none (no emulated link)", got)
	}
	d.Site = ""
	d.Topology.Links[1].Config.Up.Trace = "x.trace"
	if got, ok := d.Floor("message_latency_p95_ms"); ok {
		t.Errorf("a trace on the broker's link: floor %v; want none", got)
	}
	a.Topology.Links[0].Config.Down.JitterDist, a.Topology.Links[0].Config.Down.Jitter = emu.DistNormal, ms(1)
	if got, ok := a.Floor("delay_p99_ms"); ok {
		t.Errorf("normal jitter on the way back: floor %v; want none", got)
	}
}
