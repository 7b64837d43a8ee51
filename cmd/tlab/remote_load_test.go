package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/units"
)

// TestLoopBesideABulkFlowAcrossARealPath: a control loop (a request
// every 100 ms, longer than the loaded round trip) runs across a real
// path beside a bulk TCP upload whose far end is the agent. The path's bottleneck (20 Mbit/s up, 100 packets: 60 ms of
// buffer) is the real one, so the load fills it: the loop's p50 rises by
// tens of milliseconds over its unloaded twin, the upload's goodput is
// what the agent received (near the 20 Mbit/s), and load.csv has the
// effect with its interval.
func TestLoopBesideABulkFlowAcrossARealPath(t *testing.T) {
	bin := buildTlab(t)
	up := emu.DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Rate: 20e6, QueuePackets: 100}
	down := emu.DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Rate: 50e6}
	m := pathMachines(t, bin, emu.LinkConfig{Up: up, Down: down}, 1, "remote load test", "", t.TempDir())
	dir := filepath.Join(t.TempDir(), "run")
	// 2 s of the loop (20 requests) after the 1 s warm-up, in which the
	// upload fills the buffer. Its window past the path's 33-packet
	// bandwidth-delay product (20 Mbit/s, 20 ms) holds the 100-packet
	// buffer: at a loss (133 packets in flight) cubic cuts it to 0.7 of
	// that, 93, leaving 60 packets (36 ms) queued. So every request of
	// the loaded cell waits at least 20 + 36 ms, above the bound of
	// p0+20 (~42 ms) whatever the number of requests, and the link is
	// never idle, so the goodput is the 20 Mbit/s over any stretch.
	args := append([]string{"run", "--protocols", "tcp", "--interval", "100ms", "--duration", "2s", "--warmup", "1s",
		"--set", "matrix={cross.flows: [0, 1]}", "--out", dir}, m.remoteArgs()...)
	stdout, stderr, err := m.controller(t, args...)
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s\nagent: %s", err, stdout, stderr, m.agentLog)
	}
	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	byFlows := map[string]results.Summary{}
	for _, row := range r.Rows {
		byFlows[row.Param("cross.flows")] = row
	}
	idle, loaded := byFlows["0"], byFlows["1"]
	p0, p1 := idle.Float("delay_p50_ms"), loaded.Float("delay_p50_ms")
	goodput := loaded.Float("cross_goodput_mbps")
	t.Logf("loop p50 %.2f ms alone, %.2f ms beside the upload; upload %.2f Mbit/s, %v carrying", p0, p1, goodput, loaded.Float("cross_flows_carrying"))
	if !(p0 >= 19 && p0 <= 26) || !(p1 >= p0+20) {
		t.Errorf("loop p50 %.2f ms alone and %.2f beside a bulk upload filling a 60 ms buffer", p0, p1)
	}
	if !(goodput >= 12 && goodput <= 21) || loaded.Float("cross_flows_carrying") != 1 {
		t.Errorf("the upload as the agent received it: %.2f Mbit/s, %v flows carrying; want near the path's 20", goodput, loaded.Float("cross_flows_carrying"))
	}
	load, err := os.ReadFile(filepath.Join(dir, "load.csv"))
	if err != nil || !strings.Contains(string(load), "remote / tcp") {
		t.Errorf("load.csv has no effect for the real path: %v\n%s", err, load)
	}
	if !strings.Contains(m.agentLog.String(), "bulk tcp on port 4435") {
		t.Errorf("the agent's log does not say it ran the bulk flows' far end:\n%s", m.agentLog)
	}
}
