package experiment

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/units"
)

// waitUDPBound waits until a UDP socket in host's network namespace is
// bound to port, reading the namespace's socket table
// (/proc/thread-self/net/udp: the thread running in the namespace, not the
// process's first thread; proc(5)), at most for limit.
func waitUDPBound(host *testbed.Host, port int, limit time.Duration) error {
	want := fmt.Sprintf(":%04X ", port)
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		var table []byte
		err := host.Do(func() error {
			var err error
			table, err = os.ReadFile("/proc/thread-self/net/udp")
			return err
		})
		if err != nil {
			return fmt.Errorf("reading the UDP sockets: %w", err)
		}
		for _, line := range strings.Split(string(table), "\n")[1:] {
			// "sl local_address rem_address st ...": local_address is
			// ADDR:PORT in hex.
			if f := strings.Fields(line); len(f) > 1 && strings.HasSuffix(f[1]+" ", want) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no UDP socket bound to port %d after %v", port, limit)
		}
	}
}

// irttPacket is one of irtt's round trips: when it was sent on the
// link's clock, and its one-way send delay.
type irttPacket struct {
	at, delay time.Duration
}

// irttThrough runs irtt for runFor (a packet every 10 ms) from client to
// server through tb, calling during, if set, while it runs; it returns
// irtt's packets on the link's clock and the slack the host's noise gives
// a delay (tbtest.NoiseSlackMs over the emulator's release error and the
// host's wake-ups, plus how well the link's clock was placed on the wall
// clock, plus 0.5 ms).
func irttThrough(t *testing.T, tb *testbed.Testbed, runFor time.Duration, during func()) ([]irttPacket, time.Duration) {
	t.Helper()
	irtt, err := exec.LookPath("irtt")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("irtt is missing on CI: scripts/setup --tests installs it")
		}
		t.Skip("irtt is not installed (scripts/setup --tests installs it)")
	}
	// Where the link's clock stands on the wall clock: read between two
	// wall-clock stamps, it is known to half the request's time.
	w0 := time.Now()
	stats, err := tb.Emulator().Stats()
	w1 := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	origin := w0.Add(w1.Sub(w0) / 2).Add(-time.Duration(stats.ClockNs))
	originErr := w1.Sub(w0) / 2

	server, err := tb.Addr("client", "server")
	if err != nil {
		t.Fatal(err)
	}
	probe := hostnoise.Start()
	srv, err := tb.Host("server").Start(exec.Command(irtt, "server", "-b", fmt.Sprintf("%s:2112", server)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	// The client fails at once on "connection refused", so it starts only
	// once the server has bound its port (on a loaded host the server may
	// take longer to start than the client).
	if err := waitUDPBound(tb.Host("server"), 2112, 10*time.Second); err != nil {
		t.Fatalf("irtt server: %v", err)
	}
	out := filepath.Join(t.TempDir(), "irtt.json")
	client := exec.Command(irtt, "client", "-i", "10ms", "-d", runFor.String(), "-Q", "--wait=500ms", "-o", out, fmt.Sprintf("%s:2112", server))
	done := make(chan struct{})
	if during != nil {
		go func() {
			defer close(done)
			during()
		}()
	} else {
		close(done)
	}
	runErr := tb.Host("client").Run(client, "")
	<-done
	if runErr != nil {
		t.Fatalf("irtt client: %v", runErr)
	}
	host := probe.Stop()
	end, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		RoundTrips []struct {
			Lost       string `json:"lost"`
			Timestamps struct {
				Client struct {
					Send struct{ Wall int64 } `json:"send"`
				} `json:"client"`
			} `json:"timestamps"`
			Delay struct {
				Send int64 `json:"send"`
			} `json:"delay"`
		} `json:"round_trips"`
	}
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &res) != nil {
		t.Fatalf("irtt's output: %v", err)
	}
	var pkts []irttPacket
	for _, rt := range res.RoundTrips {
		if rt.Lost != "false" || rt.Delay.Send == 0 {
			continue
		}
		pkts = append(pkts, irttPacket{at: time.Unix(0, rt.Timestamps.Client.Send.Wall).Sub(origin), delay: time.Duration(rt.Delay.Send)})
	}
	sort.Slice(pkts, func(i, j int) bool { return pkts[i].at < pkts[j].at })
	row := results.Summary{}
	row.Set("emu_release_p99_us", end.Lateness.P99)
	row.Set("host_wakeup_p99_us", host.WakeP99Us)
	row.Set("host_steal_pct", host.StealPct)
	maxDelayMs := 0.0
	for _, p := range pkts {
		maxDelayMs = max(maxDelayMs, float64(p.delay)/1e6)
	}
	slack := time.Duration((tbtest.NoiseSlackMs(min(maxDelayMs, 1000), row)+0.5)*1e6) + originErr
	t.Logf("irtt: %d packets; slack %v (release p99 %.0f µs, wake-up p99 %.0f µs, steal %.1f %%, clock placed to %v)",
		len(pkts), slack, end.Lateness.P99, host.WakeP99Us, host.StealPct, originErr)
	return pkts, slack
}

// checkDelayChange checks that irtt's send delay changed from before to
// after at the time at on the link's clock: the boundary between two
// packets that the fewest packets contradict (one of the new delay before
// it, one of the old after; a packet the host held up looks like one of
// the higher delay, and on a busy host a few are, never a tenth) lies
// within slack of at, and each side's median is its delay within slack.
func checkDelayChange(t *testing.T, pkts []irttPacket, slack time.Duration, before, after, at time.Duration) {
	t.Helper()
	mid := (before + after) / 2
	isNew := func(p irttPacket) bool { return (p.delay >= mid) == (after > before) }
	newTotal := 0
	for _, p := range pkts {
		if isNew(p) {
			newTotal++
		}
	}
	best, bestWrong, newBefore := 0, len(pkts)+1, 0
	for i := 0; i <= len(pkts); i++ {
		// The boundary before packet i.
		if wrong := newBefore + (len(pkts) - i - (newTotal - newBefore)); wrong < bestWrong {
			best, bestWrong = i, wrong
		}
		if i < len(pkts) && isNew(pkts[i]) {
			newBefore++
		}
	}
	if best < 50 || len(pkts)-best < 50 {
		t.Fatalf("%d packets before the change and %d after: want both sides measured", best, len(pkts)-best)
	}
	median := func(ps []irttPacket) time.Duration {
		d := make([]time.Duration, len(ps))
		for i, p := range ps {
			d[i] = p.delay
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	lastOld, firstNew := pkts[best-1].at, pkts[best].at
	mOld, mNew := median(pkts[:best]), median(pkts[best:])
	t.Logf("the change between packets sent at %v and %v of the link's clock (want %v), %d of %d packets on the wrong side; median send delay %v before, %v after",
		lastOld, firstNew, at, bestWrong, len(pkts), mOld, mNew)
	if lastOld > at+slack {
		t.Errorf("the packet sent at %v took the old delay: the change at %v came late", lastOld, at)
	}
	if firstNew < at-slack {
		t.Errorf("the packet sent at %v took the new delay: the change at %v came early", firstNew, at)
	}
	if bestWrong > len(pkts)/10 {
		t.Errorf("%d of %d packets took the delay of the other side of the change", bestWrong, len(pkts))
	}
	if d := mOld - before; d < -slack || d > slack {
		t.Errorf("median send delay before the change %v, want %v ± %v", mOld, before, slack)
	}
	if d := mNew - after; d < -slack || d > slack {
		t.Errorf("median send delay after the change %v, want %v ± %v", mNew, after, slack)
	}
}

// TestIrttSeesADelayStepAtItsTime: irtt, a client and server nobody here
// wrote, sends a packet every 10 ms through an emulated link whose up
// delay steps from 10 to 40 ms at 4 s on the link's clock. Both ends
// share this machine's clock, so irtt's one-way send delays are exact:
// every packet that entered the link before the step took 10 ms, every
// one after 40 ms, and the change falls at 4 s, within the host's noise.
func TestIrttSeesADelayStepAtItsTime(t *testing.T) {
	requireRoot(t)
	const before, after, stepAt = 10 * time.Millisecond, 40 * time.Millisecond, 4 * time.Second
	stepTo := units.Duration(after)
	up := emu.DirectionConfig{Delay: units.Duration(before), Timeline: emu.Timeline{Steps: []emu.TimelineStep{{At: units.Duration(stepAt), Delay: &stepTo}}}}
	down := emu.DirectionConfig{Delay: units.Duration(before)}
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: up, Down: down}), testbed.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if stats, err := tb.Emulator().Stats(); err != nil || time.Duration(stats.ClockNs) > stepAt-time.Second {
		t.Fatalf("the testbed took until %v of the link's clock (%v): too late to see the step at %v", time.Duration(stats.ClockNs), err, stepAt)
	}
	pkts, slack := irttThrough(t, tb, 6*time.Second, nil)
	checkDelayChange(t, pkts, slack, before, after, stepAt)
}

// TestIrttSeesALiveChangeAtItsTime: the same, with the delay changed
// live from 10 to 40 ms while irtt runs, through the run's control socket
// as `tlab link set` does: the change falls when the engine says it took
// effect, and the emulator keeps it for the cell's records.
func TestIrttSeesALiveChangeAtItsTime(t *testing.T) {
	requireRoot(t)
	const before, after = 10 * time.Millisecond, 40 * time.Millisecond
	d := emu.DirectionConfig{Delay: units.Duration(before)}
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: d, Down: d}), testbed.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	// Through the run's control socket, as tlab link set does.
	sock, err := testbed.LiveSocket(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	} else if st.Mode().Perm()&0o077 != 0 {
		t.Errorf("the control socket %s has mode %v: want its user's alone", sock, st.Mode())
	}
	var answer emu.LiveResponse
	var setErr error
	pkts, slack := irttThrough(t, tb, 4*time.Second, func() {
		time.Sleep(2 * time.Second)
		answer, setErr = emu.SendLive(sock, emu.LiveRequest{Changes: "up.delay=40ms"})
	})
	if setErr != nil || answer.Error != "" || len(answer.Events) != 1 {
		t.Fatalf("tlab link set's request: %v, answer %+v", setErr, answer)
	}
	if ev := answer.Events[0]; ev.Direction != "up" || ev.Source != emu.EventLive || ev.State.Delay != after {
		t.Errorf("the change's event %+v: want up, live, to 40 ms", ev)
	}
	if kept := tb.Emulator().LiveEvents(); len(kept) != 1 || kept[0] != answer.Events[0] {
		t.Errorf("the emulator kept %+v for the cell's link-events.csv", kept)
	}
	checkDelayChange(t, pkts, slack, before, after, answer.Events[0].At)
}

// TestIperf3FollowsARateRamp: iperf3, received at the client (-R), over a
// link whose down rate is 40 Mbit/s, ramps down to 10 Mbit/s from 3 to
// 5 s of the link's clock, and holds. TCP fills the bottleneck, so each
// half-second interval away from the ramp's ends receives the rate the
// ramp gives then (its mean over the interval) less the headers: at
// least 80 % of it (TCP over IP over Ethernet carries 1448 of 1514 bytes,
// 95.6 %, and a congestion controller's sawtooth keeps some below), and
// no more than the rate (2 % for its rounding) plus what the interval
// before fell short of it: a receiver the host starved for a while reads
// the link's backlog in the next interval (43.3 Mbit/s in a half-second
// of a 40 Mbit/s link beside a CPU hog, after a short one), which no link
// did wrong, and that backlog is at most the earlier interval's shortfall.
func TestIperf3FollowsARateRamp(t *testing.T) {
	requireRoot(t)
	iperf3, err := exec.LookPath("iperf3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("iperf3 is missing on CI: scripts/setup --tests installs it")
		}
		t.Skip("iperf3 is not installed (scripts/setup --tests installs it)")
	}
	ten := units.Bitrate(10e6)
	up := emu.DirectionConfig{Delay: units.Duration(5 * time.Millisecond)}
	down := up
	down.Rate = 40e6
	down.Timeline = emu.Timeline{Steps: []emu.TimelineStep{{At: units.Duration(3 * time.Second), Ramp: units.Duration(2 * time.Second), Rate: &ten}}}
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: up, Down: down}), testbed.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	server, err := tb.Addr("client", "server")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := tb.Host("server").Start(exec.Command(iperf3, "-s", "-1", "-B", server.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	time.Sleep(300 * time.Millisecond) // the server's listening socket
	stats, err := tb.Emulator().Stats()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Duration(stats.ClockNs)
	if began > 2*time.Second {
		t.Fatalf("iperf3 starts at %v of the link's clock: too late to see the rate before the ramp", began)
	}
	var out []byte
	client := exec.Command(iperf3, "-c", server.String(), "-R", "-t", "8", "-i", "0.5", "-J")
	client.Stdout = (*bytesBuffer)(&out)
	if err := tb.Host("client").Run(client, ""); err != nil {
		t.Fatalf("iperf3: %v\n%s", err, out)
	}
	var res struct {
		Intervals []struct {
			Sum struct {
				Start, End    float64
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("iperf3's JSON: %v", err)
	}
	// The ramp's rate at link time s (seconds), and its mean over [a, b].
	rate := func(s float64) float64 {
		switch {
		case s < 3:
			return 40e6
		case s < 5:
			return 40e6 - 15e6*(s-3)
		}
		return 10e6
	}
	judged := 0
	shortfall := 0.0 // bits the interval before received below the link's rate
	for _, iv := range res.Intervals {
		// iperf3 counts from its connection's start, which is after
		// began: the interval on the link's clock is no earlier.
		a, b := began.Seconds()+iv.Sum.Start, began.Seconds()+iv.Sum.End
		const n = 50
		want := 0.0
		for i := range n {
			want += rate(a + (b-a)*(float64(i)+0.5)/n)
		}
		want /= n
		got := iv.Sum.BitsPerSecond
		backlog := shortfall
		shortfall = max(0, (want-got)*(b-a))
		if a < began.Seconds()+1 || (a < 3.5 && b > 2.9) || (a < 5.6 && b > 4.9) {
			continue // TCP's start, and the ramp's two ends (within the host's timing)
		}
		t.Logf("link %.2f–%.2f s: received %.2f Mbit/s, the ramp gives %.2f", a, b, got/1e6, want/1e6)
		judged++
		if most := want*1.02 + backlog/(b-a); got < 0.8*want || got > most {
			t.Errorf("link %.2f–%.2f s: received %.2f Mbit/s, want 80 %% of %.2f to %.2f (%.2f Mbit behind from before)", a, b, got/1e6, want/1e6, most/1e6, backlog/1e6)
		}
	}
	if judged < 6 {
		t.Errorf("only %d intervals judged", judged)
	}
}

// bytesBuffer collects a command's output.
type bytesBuffer []byte

func (b *bytesBuffer) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}
