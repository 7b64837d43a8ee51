package experiment

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/units"
)

// TestIrttSeesADelayStepAtItsTime: irtt, a client and server nobody here
// wrote, sends a packet every 10 ms through an emulated link whose up
// delay steps from 10 to 40 ms at 4 s on the link's clock. Both ends
// share this machine's clock, so irtt's one-way send delays are exact:
// every packet that entered the link before the step took 10 ms, every
// one after 40 ms, and the change falls at 4 s, within the host's noise
// (tbtest.NoiseSlackMs over the emulator's release error and the host's
// wake-ups) and how well the link's clock is placed on the wall clock.
func TestIrttSeesADelayStepAtItsTime(t *testing.T) {
	requireRoot(t)
	irtt, err := exec.LookPath("irtt")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("irtt is missing on CI: scripts/setup installs it")
		}
		t.Skip("irtt is not installed (scripts/setup installs it)")
	}
	const before, after, stepAt = 10 * time.Millisecond, 40 * time.Millisecond, 4 * time.Second
	stepTo := units.Duration(after)
	up := emu.DirectionConfig{Delay: units.Duration(before), Timeline: emu.Timeline{Steps: []emu.TimelineStep{{At: units.Duration(stepAt), Delay: &stepTo}}}}
	down := emu.DirectionConfig{Delay: units.Duration(before)}
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: up, Down: down}), testbed.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()

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
	if lead := stepAt - time.Duration(stats.ClockNs); lead < time.Second {
		t.Fatalf("the testbed took until %v of the link's clock: too late to see the step at %v", time.Duration(stats.ClockNs), stepAt)
	}

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
	out := filepath.Join(t.TempDir(), "irtt.json")
	client := exec.Command(irtt, "client", "-i", "10ms", "-d", "6s", "-Q", "--wait=500ms", "-o", out, fmt.Sprintf("%s:2112", server))
	if err := tb.Host("client").Run(client, ""); err != nil {
		t.Fatalf("irtt client: %v", err)
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
	row := results.Summary{}
	row.Set("emu_release_p99_us", end.Lateness.P99)
	row.Set("host_wakeup_p99_us", host.WakeP99Us)
	row.Set("host_steal_pct", host.StealPct)
	slack := time.Duration((tbtest.NoiseSlackMs(after.Seconds()*1000, row)+0.5)*1e6) + originErr
	mid := (before + after) / 2

	// Each packet's send time on the link's clock, and whether it took
	// the new delay, in the order sent.
	type packet struct {
		at  time.Duration
		new bool
	}
	var pkts []packet
	var olds, news []float64
	for _, rt := range res.RoundTrips {
		if rt.Lost != "false" || rt.Delay.Send == 0 {
			continue
		}
		p := packet{at: time.Unix(0, rt.Timestamps.Client.Send.Wall).Sub(origin), new: time.Duration(rt.Delay.Send) >= mid}
		pkts = append(pkts, p)
		if p.new {
			news = append(news, float64(rt.Delay.Send)/1e6)
		} else {
			olds = append(olds, float64(rt.Delay.Send)/1e6)
		}
	}
	sort.Slice(pkts, func(i, j int) bool { return pkts[i].at < pkts[j].at })
	// Where the delay changed: the boundary between two packets that the
	// fewest packets contradict (one of the new delay before it, one of
	// the old after), so that a single packet the host held up does not
	// move it.
	newAfter := 0
	for _, p := range pkts {
		if p.new {
			newAfter++
		}
	}
	best, bestWrong, oldBefore, newBefore := 0, len(pkts)+1, 0, 0
	for i := 0; i <= len(pkts); i++ {
		// Boundary before packet i.
		if wrong := newBefore + (len(pkts) - i - (newAfter - newBefore)); wrong < bestWrong {
			best, bestWrong = i, wrong
		}
		if i < len(pkts) {
			if pkts[i].new {
				newBefore++
			} else {
				oldBefore++
			}
		}
	}
	if best == 0 || best == len(pkts) {
		t.Fatalf("no change of delay seen in %d packets", len(pkts))
	}
	lastOld, firstNew := pkts[best-1].at, pkts[best].at
	median := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	t.Logf("irtt: %d packets at 10 ms (median send delay %.2f ms), %d at 40 ms (%.2f ms); the change between packets sent at %v and %v of the link's clock, %d packets on the wrong side; slack %v (release p99 %.0f µs, wake-up p99 %.0f µs, clock placed to %v)",
		len(olds), median(olds), len(news), median(news), lastOld, firstNew, bestWrong, slack, end.Lateness.P99, host.WakeP99Us, originErr)
	if len(olds) < 50 || len(news) < 50 {
		t.Fatalf("%d packets before the step and %d after: want both sides measured", len(olds), len(news))
	}
	tol := float64(slack) / 1e6
	if m := median(olds); m < float64(before)/1e6-tol || m > float64(before)/1e6+tol {
		t.Errorf("median send delay before the step %.2f ms, want 10 ± %.2f", m, tol)
	}
	if m := median(news); m < float64(after)/1e6-tol || m > float64(after)/1e6+tol {
		t.Errorf("median send delay after the step %.2f ms, want 40 ± %.2f", m, tol)
	}
	// The step at its time: no packet sent after it (by more than the
	// slack) took the old delay, none sent before it the new one.
	if lastOld > stepAt+slack {
		t.Errorf("the packet sent at %v took the old delay: the step at %v came late", lastOld, stepAt)
	}
	if firstNew < stepAt-slack {
		t.Errorf("the packet sent at %v took the new delay: the step at %v came early", firstNew, stepAt)
	}
	// A packet the host held up by more than 15 ms looks like one of
	// the new delay: on a busy host a few do, never a tenth of them.
	if bestWrong > len(pkts)/10 {
		t.Errorf("%d of %d packets took the delay of the other side of the step", bestWrong, len(pkts))
	}
}
