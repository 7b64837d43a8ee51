package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/units"
)

// TestReplayUnderLightAndHeavyUse is an experiment, not a check: it runs
// only with TLAB_EXPERIMENT=replay (about 15 minutes) and prints the
// table docs/methodology.md keeps. It records a path tlab has not seen
// (the far side's emulator standing for a real network: an asymmetric
// path whose up direction has a shallow queue, skewed jitter correlated
// in time and bursty loss, and whose down direction follows a rate trace
// with slow stretches and a short outage that holds its packets), then
// runs light and heavy use across the path and on its recording,
// alternately, three repetitions each, and prints replay.csv: the
// difference at the median and at the p99, with its interval, per
// protocol.
//
//	TLAB_EXPERIMENT=replay go test ./cmd/tlab -run TestReplayUnderLightAndHeavyUse -v -timeout 40m
//
// TLAB_EXPERIMENT=replay-outages records another unseen path instead, one
// with short periodic outages (both directions 30 ms and 20 Mbit/s,
// everything dropped for 150 ms every 2.5 s, nothing else lost): the
// kind of path whose outages a recording once fitted as packet bursts
// that a backed-off TCP loop stretched into a 16 s stall.
func TestReplayUnderLightAndHeavyUse(t *testing.T) {
	exp := os.Getenv("TLAB_EXPERIMENT")
	if exp != "replay" && exp != "replay-outages" {
		t.Skip("an experiment: TLAB_EXPERIMENT=replay (or replay-outages) runs it")
	}
	bin := buildTlab(t)
	tbtest.RequirePrivileges(t)
	dir := t.TempDir()
	if keep := os.Getenv("TLAB_KEEP"); keep != "" {
		defer func() { _ = os.CopyFS(filepath.Join(keep, "replay-experiment"), os.DirFS(dir)) }()
	}
	// Down: 20 Mbit/s, with 2 s at 5 and 2 s at 2 Mbit/s and a 300 ms
	// hold, repeating every 10 s.
	var trace strings.Builder
	levels := []float64{20, 20, 5, 5, 20, 20, 2, 2, 20, 20}
	acc := 0.0
	for s, mbit := range levels {
		for ms := s * 1000; ms < (s+1)*1000; ms++ {
			if ms >= 8500 && ms < 8800 {
				continue
			}
			for acc += mbit * 1e6 / (1500 * 8) / 1000; acc >= 1; acc-- {
				fmt.Fprintln(&trace, ms+1)
			}
		}
	}
	tracePath := filepath.Join(dir, "down.trace")
	if err := os.WriteFile(tracePath, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	up := emu.DirectionConfig{Delay: units.Duration(30 * time.Millisecond), Rate: 8e6, QueuePackets: 30,
		Jitter: units.Duration(2 * time.Millisecond), JitterDist: emu.DistLogNormal, JitterCoherence: units.Duration(10 * time.Millisecond),
		Loss: emu.LossConfig{Model: "gilbert-elliott", Rate: 0.02, MeanBurst: 4}}
	down := emu.DirectionConfig{Delay: units.Duration(30 * time.Millisecond), Trace: tracePath}
	if exp == "replay-outages" {
		outage := []emu.Outage{{At: units.Duration(time.Second), For: units.Duration(150 * time.Millisecond), Every: units.Duration(2500 * time.Millisecond)}}
		up = emu.DirectionConfig{Delay: units.Duration(30 * time.Millisecond), Rate: 20e6, Outages: outage}
		down = emu.DirectionConfig{Delay: units.Duration(30 * time.Millisecond), Rate: 20e6, Outages: outage}
	}
	m := pathMachines(t, bin, emu.LinkConfig{Up: up, Down: down}, 5, "replay experiment", "20s", dir)
	profile := filepath.Join(dir, "unseen.yaml")
	stdout, stderr, err := m.controller(t, "record", "--remote", m.agentAddr, "--token-file", m.tokenFile, "--state", m.ctlState, "--duration", "40s", "--out", profile)
	if err != nil {
		t.Fatalf("record: %v\n%s\n%s", err, stdout, stderr)
	}
	t.Log(stdout)
	if y, err := os.ReadFile(profile); err == nil {
		t.Log(string(y))
	}
	uses := []struct {
		name string
		args []string
	}{
		{"periodic 1 KB every 20 ms (h3: several in flight)", []string{"--protocols", "tcp,quic,h3", "--interval", "20ms", "--payload", "1024"}},
		{"frames of 20 KB at 30 Hz", []string{"--workload", "frames", "--set", "workload.size=20KB", "--protocols", "udp,tcp,quic-dgram"}},
		// The latency-under-load loop beside a bulk upload: on the path
		// its far end is the agent, on the replay the emulated server.
		{"loop every 100 ms beside a bulk TCP upload", []string{"--protocols", "tcp,quic", "--interval", "100ms", "--set", "matrix={cross.flows: [0, 1]}"}},
	}
	// TLAB_REPLAY_USES=2 runs the third use alone (indices, comma-separated).
	only := map[int]bool{}
	for _, f := range strings.Split(os.Getenv("TLAB_REPLAY_USES"), ",") {
		if i, err := strconv.Atoi(strings.TrimSpace(f)); err == nil {
			only[i] = true
		}
	}
	var table strings.Builder
	table.WriteString("| use | protocol | swept | at | path ms | replay ms | difference (95 % CI) | verdict |\n|---|---|---|---|---|---|---|---|\n")
	for i, u := range uses {
		if len(only) > 0 && !only[i] {
			continue
		}
		out := filepath.Join(dir, fmt.Sprintf("use%d", i))
		args := append([]string{"run"}, u.args...)
		args = append(args, "--duration", "20s", "--warmup", "2s", "--set", "repetitions=3", "--no-calibration",
			"--remote", m.agentAddr, "--state", m.ctlState, "--replay", profile, "--out", out)
		if so, se, err := m.controller(t, args...); err != nil {
			t.Errorf("%s: %v\n%s\n%s", u.name, err, so, se)
			continue
		}
		f, err := os.Open(filepath.Join(out, "replay.csv"))
		if err != nil {
			t.Error(err)
			continue
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(rows) < 2 {
			t.Errorf("%s: replay.csv: %v", u.name, err)
			continue
		}
		col := map[string]int{}
		for j, name := range rows[0] {
			col[name] = j
		}
		for _, r := range rows[1:] {
			if r[col["metric"]] != "delay_ms" {
				continue
			}
			at := "p50"
			if r[col["quantile"]] == "0.99" {
				at = "p99"
			}
			fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %s | %s (%s to %s) | %s |\n", u.name, r[col["profile"]], r[col["params"]], at, r[col["median_a"]], r[col["median_b"]],
				r[col["median_diff"]], r[col["median_diff_ci_low"]], r[col["median_diff_ci_high"]], r[col["verdict"]])
		}
	}
	t.Log("\n" + table.String())
}
