package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// killScenarios are one short run of each workload type, a suite and a
// sharded sweep, each of four cells of about a second or two, so that a
// kill at a random moment lands in a cell as often as between cells.
// The suite's parts have one repetition each (two cells a part, four in
// all: a kill lands in either part as before); repetitions, and a
// resume that must finish a cell's second one, are bulk's.
var killScenarios = []struct {
	name   string
	files  map[string]string // file → content; the first key in run order is the one run
	run    string
	shards int
}{
	{name: "periodic", run: "s.yaml", files: map[string]string{"s.yaml": `name: kill-periodic
profiles: [ethernet]
protocols: [tcp, quic]
workload: {type: periodic, interval: 10ms, payload: 200}
matrix:
  workload.interval: [10ms, 20ms]
count: 80
warmup: 0s
`}},
	{name: "upload", run: "s.yaml", files: map[string]string{"s.yaml": `name: kill-upload
profiles: [wan-25ms]
protocols: [h1s, h3]
workload: {type: upload, size: 30}
matrix:
  workload.size: [30, 3500]
count: 12
warmup: 0s
`}},
	{name: "pubsub-suite", run: "suite.yaml", files: map[string]string{
		"suite.yaml": "name: kill-pubsub\ndescription: two parts\nsuite: [a.yaml, b.yaml]\n",
		"a.yaml": `name: a
profiles: [wan-25ms]
protocols: [mqtt-tcp, mqtt-quic]
workload: {type: pubsub, messages: 20, size: 32, pattern: stop-and-wait}
warmup: 0s
`,
		"b.yaml": `name: b
profiles: [wan-25ms]
protocols: [mqtt-tls, mqtt-quic]
workload: {type: pubsub, messages: 10, size: 32, pattern: reconnect}
warmup: 0s
settings: {zero_rtt: true}
`}},
	{name: "frames", run: "s.yaml", files: map[string]string{"s.yaml": `name: kill-frames
profiles: [wifi-ac]
protocols: [udp, quic-streams]
workload: {type: frames, fps: 30, size: 20KB}
matrix:
  workload.fps: [30, 60]
count: 45
warmup: 0s
`}},
	{name: "bulk", run: "s.yaml", files: map[string]string{"s.yaml": `name: kill-bulk
profiles: [wifi]
protocols: [tcp, h2]
workload: {type: bulk, bytes: 1MiB, streams: 1}
repetitions: 2
warmup: 0s
`}},
	{name: "sharded", run: "s.yaml", shards: 2, files: map[string]string{"s.yaml": `name: kill-shards
profiles: [ethernet, wan-25ms]
protocols: [tcp, h2]
workload: {type: periodic, interval: 10ms, payload: 200}
count: 60
warmup: 0s
`}},
}

// TestKillAtRandomAndResume runs each of killScenarios once undisturbed
// (the reference), then again while killing it with SIGKILL or SIGINT at
// random moments and resuming it each time, and checks that nothing was
// lost or doubled: the same cells, each exactly once, each with as many
// records as the reference's, no record twice, every file parses, report
// and stats rebuild, and nothing is left running or registered.
//
// The scenarios run two at a time (-parallel), each with a copy of tlab
// of its own so that a process left after a kill is its own.
//
// CI runs the short form, one kill a scenario (six in all). The long
// form: TLAB_KILLS=5 go test -run TestKillAtRandomAndResume -v ./cmd/tlab
// (thirty kills). TLAB_KILL_SEED replays a run's kill moments.
func TestKillAtRandomAndResume(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	kills := 1
	if s := os.Getenv("TLAB_KILLS"); s != "" {
		var err error
		if kills, err = strconv.Atoi(s); err != nil || kills < 1 {
			t.Fatalf("TLAB_KILLS=%q: want a positive count", s)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TLAB_KILL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("kill moments from seed %d (TLAB_KILL_SEED=%d replays them)", seed, seed)
	bin := buildTlab(t)
	// The runs' temporary directories go to a directory of this test's
	// own, so that what it finds left over is its runs', not those of
	// another tlab on the same machine (short: it holds sockets).
	tmp, err := os.MkdirTemp("", "tlab-kill-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	linksBefore := linkCount(t)
	runDirsBefore := tempRunDirs()
	var bins []string
	for _, sc := range killScenarios {
		bins = append(bins, copyFile(t, bin, filepath.Join(tmp, "tlab-"+sc.name)))
	}
	var survived, landedInCell atomic.Int64
	// The scenarios run side by side (as many at once as -parallel, the
	// CPUs by default): a run spends most of its time waiting for its
	// cells' packets, and this test times nothing; each has its own
	// generator of kill moments from the seed, so a seed still replays.
	t.Run("scenarios", func(t *testing.T) {
		for i, sc := range killScenarios {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(seed, 0x6b696c6c+uint64(i)))
				// A copy of tlab of the scenario's own: what is left
				// running after a kill is told apart from the runs
				// of the scenarios beside it by its executable.
				bin := bins[i]
				dir := t.TempDir()
				for name, content := range sc.files {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				file := filepath.Join(dir, sc.run)
				ref := filepath.Join(dir, "reference")
				began := time.Now()
				if out, err := exec.Command(bin, "run", file, "--out", ref, "--no-calibration", "--quality", "off").CombinedOutput(); err != nil {
					t.Fatalf("reference run: %v\n%s", err, out)
				}
				span := time.Since(began)
				want := runRecordCounts(t, ref)

				shards := max(sc.shards, 1)
				var outs []string
				for i := 1; i <= shards; i++ {
					out := filepath.Join(dir, fmt.Sprintf("killed-%d", i))
					outs = append(outs, out)
					args := []string{"run", file, "--out", out, "--no-calibration", "--quality", "off"}
					if sc.shards > 0 {
						args = append(args, "--shard", fmt.Sprintf("%d/%d", i, shards))
					}
					for k := 0; k < kills; k++ {
						sig := []syscall.Signal{syscall.SIGKILL, syscall.SIGINT}[rng.IntN(2)]
						// Anywhere from the start (building the testbed) to
						// near the end of what is left of the shard, at the
						// pace of the undisturbed run.
						left := 1 - float64(doneCells(out))/(float64(len(want))/float64(shards))
						at := time.Duration(float64(span/time.Duration(shards)) * max(left, 0.1) * (0.05 + 0.85*rng.Float64()))
						inCell, finished := killAt(t, bin, args, out, sig, at)
						if finished {
							t.Logf("kill %d (%v at %v) came after the run finished", k+1, sig, at.Round(time.Millisecond))
							break
						}
						survived.Add(1)
						if inCell {
							landedInCell.Add(1)
						}
						t.Logf("kill %d: %v at %v, in a cell: %v", k+1, sig, at.Round(time.Millisecond), inCell)
						args = []string{"run", "--resume", out, "--no-calibration"}
					}
					if o, err := exec.Command(bin, "run", "--resume", out, "--no-calibration").CombinedOutput(); err != nil {
						t.Fatalf("final resume of %s: %v\n%s", out, err, o)
					}
				}
				final := outs[0]
				if sc.shards > 0 {
					final = filepath.Join(dir, "merged")
					if o, err := exec.Command(bin, append(append([]string{"merge"}, outs...), "--out", final)...).CombinedOutput(); err != nil {
						t.Fatalf("merge: %v\n%s", err, o)
					}
				}
				got := runRecordCounts(t, final)
				if !mapsEqual(got, want) {
					t.Errorf("killed and resumed, records per cell:\n%v\nundisturbed:\n%v", got, want)
				}
				for _, d := range runDirs(t, final) {
					// The run's options hold in every part, also one begun
					// only by a resume.
					var man struct{ Quality string }
					if b, err := os.ReadFile(filepath.Join(d, "manifest.json")); err != nil || json.Unmarshal(b, &man) != nil || man.Quality != "off" {
						t.Errorf("%s ran with quality %q, want the run's off (%v)", d, man.Quality, err)
					}
					for _, cmd := range [][]string{{"report", d}, {"stats", d}} {
						if o, err := exec.Command(bin, cmd...).CombinedOutput(); err != nil {
							t.Errorf("tlab %s after the kills: %v\n%s", strings.Join(cmd, " "), err, o)
						}
					}
				}
			})
		}
	})
	// Nothing is left behind: no process of ours, no registered run, no
	// interface in this namespace that was not there before.
	for _, b := range append(bins, bin) {
		waitNoProcess(t, b)
	}
	o, err := exec.Command(bin, "cleanup", "--dry-run", "--json").Output()
	var actions []map[string]any
	if err != nil || json.Unmarshal(o, &actions) != nil || len(actions) != 0 {
		t.Errorf("tlab cleanup --dry-run after the kills: %v %s", err, o)
	}
	for dir := range tempRunDirs() {
		if !runDirsBefore[dir] {
			t.Errorf("a run's temp directory outlived the kills: %s", dir)
		}
	}
	if n := linkCount(t); n != linksBefore {
		t.Errorf("%d network interfaces here after the kills, %d before", n, linksBefore)
	}
	t.Logf("%d kills survived (%d in the middle of a cell), nothing lost", survived.Load(), landedInCell.Load())
	if survived.Load() < int64(len(killScenarios)*kills/2) {
		t.Errorf("only %d of %d kills landed before their run ended: the scenarios are too short for this machine", survived.Load(), len(killScenarios)*kills)
	}
}

// killAt starts tlab with args and sends sig after at. It reports whether
// a cell was under way (a cell directory without DONE) at the kill, and
// whether the run had finished before it. After SIGINT tlab must exit
// 130 within 30 s; after either, no process of the run may remain.
func killAt(t *testing.T, bin string, args []string, out string, sig syscall.Signal, at time.Duration) (inCell, finished bool) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tlab %s ended by itself with %v:\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return false, true
	case <-time.After(at):
	}
	inCell = cellUnderWay(out)
	cmd.Process.Signal(sig)
	select {
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case err == nil:
			return false, true // it finished as the signal came
		case sig == syscall.SIGINT && (!errors.As(err, &ee) || ee.ExitCode() != exitCanceled):
			t.Fatalf("after SIGINT tlab exited with %v, want %d:\n%s", err, exitCanceled, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("tlab did not stop within 30 s of %v", sig)
	}
	waitNoProcess(t, bin)
	return inCell, false
}

// copyFile copies the executable from to the path to and returns to.
func copyFile(t *testing.T, from, to string) string {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	if err != nil {
		t.Fatalf("copying %s: %v", from, err)
	}
	return to
}

// doneCells counts the complete cells of a run directory or a suite's.
func doneCells(out string) int {
	done, _ := filepath.Glob(filepath.Join(out, "cells", "*", "DONE"))
	parts, _ := filepath.Glob(filepath.Join(out, "*", "cells", "*", "DONE"))
	return len(done) + len(parts)
}

// cellUnderWay tells whether some cell of the run directory (or of a
// suite's parts) has started and not finished.
func cellUnderWay(out string) bool {
	started, _ := filepath.Glob(filepath.Join(out, "cells", "*", "records.csv"))
	parts, _ := filepath.Glob(filepath.Join(out, "*", "cells", "*", "records.csv"))
	for _, r := range append(started, parts...) {
		if _, err := os.Stat(filepath.Join(filepath.Dir(r), "DONE")); err != nil {
			return true
		}
	}
	return false
}

// waitNoProcess waits up to 5 s for every process running bin to be gone
// (an engine child dies by its parent-death signal, a moment after).
func waitNoProcess(t *testing.T, bin string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		procs, _ := filepath.Glob("/proc/[0-9]*/exe")
		for _, p := range procs {
			if target, err := os.Readlink(p); err == nil && target == bin {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
	}
	t.Fatalf("still running %s: %v", bin, left)
}

// runDirs is the run directory, or each part's of a suite.
func runDirs(t *testing.T, out string) []string {
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err == nil {
		return []string{out}
	}
	parts, _ := filepath.Glob(filepath.Join(out, "*", "summary.json"))
	if len(parts) == 0 {
		t.Fatalf("%s holds no run", out)
	}
	var dirs []string
	for _, p := range parts {
		dirs = append(dirs, filepath.Dir(p))
	}
	return dirs
}

// runRecordCounts reads a finished run (or suite) as a user would: every
// summary row's cell once, records.csv parsed whole, no record (cell,
// attempt, seq) twice, and the records of each cell counted. It fails the
// test on anything else.
func runRecordCounts(t *testing.T, out string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, d := range runDirs(t, out) {
		part, _ := filepath.Rel(out, d) // "." or a suite's part
		part += "/"
		var rows []map[string]any
		b, err := os.ReadFile(filepath.Join(d, "summary.json"))
		if err != nil || json.Unmarshal(b, &rows) != nil {
			t.Fatalf("%s: summary.json: %v", d, err)
		}
		for _, r := range rows {
			id, _ := r["cell"].(string)
			if _, twice := counts[part+id]; twice {
				t.Errorf("%s: cell %s twice in the summary", d, id)
			}
			counts[part+id] = 0
		}
		f, err := os.Open(filepath.Join(d, "records.csv"))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatalf("%s: records.csv does not parse: %v", d, err)
		}
		cell, attempt, seq := slices.Index(recs[0], "cell"), slices.Index(recs[0], "attempt"), slices.Index(recs[0], "seq")
		if cell < 0 || attempt < 0 || seq < 0 {
			t.Fatalf("%s: records.csv lacks cell, attempt or seq: %v", d, recs[0])
		}
		seen := map[string]bool{}
		for _, r := range recs[1:] {
			key := r[cell] + "/" + r[attempt] + "/" + r[seq]
			if seen[key] {
				t.Errorf("%s: record %s twice", d, key)
			}
			seen[key] = true
			if _, ok := counts[part+r[cell]]; !ok {
				t.Errorf("%s: records of cell %s, which the summary lacks", d, r[cell])
			}
			counts[part+r[cell]]++
		}
	}
	return counts
}

// tempRunDirs lists the runs' temp directories (tlab-RUNID) under
// $TMPDIR (TestKillAtRandomAndResume's own).
func tempRunDirs() map[string]bool {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "tlab-2*"))
	out := map[string]bool{}
	for _, d := range dirs {
		out[d] = true
	}
	return out
}

func linkCount(t *testing.T) int {
	o, err := exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Skipf("ip link: %v", err)
	}
	return strings.Count(string(o), "\n")
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
