package experiment

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"tlab/internal/cellrun"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"tlab/internal/cluster"
	"tlab/internal/explore"
	"tlab/internal/plan"
	"tlab/internal/results"
)

// fakeRounds explores 0..10 % loss from a coarse grid of 3 points, each
// point 2 repetitions of 2 stacks in the first round (12 cells) and one
// more of each unsettled point in the second (6 cells): a budget of 18
// cells is exactly two rounds.
const fakeRounds = `name: fake-rounds
profiles: [ethernet]
protocols: [quic, tcp]
workload: {type: periodic, interval: 10ms}
count: 5
warmup: 0s
require: ["delay_p99_ms<=1000"]
explore:
  parameters:
    link.loss: {range: 0%..10%, resolution: 1%}
  coarse: 2
  max_repetitions: 6
  budget: 18
`

// inProcessRounds runs a round's tasks one after another in this
// process, each as a cluster's task would: its shard of round.json into
// the round's shard-I.
type inProcessRounds struct {
	shards int
	calls  *int
	rounds []Round
	// attempt runs a task's cells (flipAttempt when nil).
	attempt func(context.Context, cellrun.CellSpec, func(results.Record) error, func(cellrun.Progress)) (cellrun.CellResult, error)
	// warn, when set, is a warning each task's manifest gets, as a
	// disturbed node's would.
	warn string
}

func (r *inProcessRounds) Tasks() int { return r.shards }

func (r *inProcessRounds) RunRound(ctx context.Context, round Round) error {
	r.rounds = append(r.rounds, round)
	attempt := r.attempt
	if attempt == nil {
		attempt = flipAttempt(r.calls)
	}
	for i := 1; i <= round.Shards; i++ {
		// The quality rule and the calibration are the controller's,
		// from round.json.
		task := RoundTask{Dir: round.Dir, Shard: Shard{I: i, N: round.Shards}, attempt: attempt}
		if err := task.Run(ctx); err != nil {
			return err
		}
		if r.warn != "" {
			sh := filepath.Join(round.Dir, "shard-"+strconv.Itoa(i))
			mf, err := results.ReadManifest(sh)
			if err != nil {
				return err
			}
			mf.Warnings = append(mf.Warnings, r.warn)
			if err := mf.Save(sh); err != nil {
				return err
			}
		}
	}
	return nil
}

// refuseCells is the controller's own cell runner when its rounds run
// elsewhere: it must never be called.
func refuseCells(t *testing.T) func(context.Context, cellrun.CellSpec, func(results.Record) error, func(cellrun.Progress)) (cellrun.CellResult, error) {
	return func(_ context.Context, spec cellrun.CellSpec, _ func(results.Record) error, _ func(cellrun.Progress)) (cellrun.CellResult, error) {
		t.Errorf("the controller ran cell %s itself", spec.Cell.ID)
		return cellrun.CellResult{}, context.Canceled
	}
}

// Rounds run as shards elsewhere and merged by the controller give the
// map one machine gives (every cell keeps its id and seed, so the same
// outcomes reach the same search), each cell run once, by a task, in
// the round's shard k mod N + 1.
func TestDispatchedRoundsGiveTheMapOfOneMachine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "e.yaml")
	if err := os.WriteFile(file, []byte(fakeRounds), 0o644); err != nil {
		t.Fatal(err)
	}
	localCalls := 0
	local, err := Exploration{NameOrFile: file, Out: filepath.Join(t.TempDir(), "local"), NoCalibration: true, NoWhy: true, NoReport: true,
		attempt: flipAttempt(&localCalls)}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	taskCalls := 0
	runner := &inProcessRounds{shards: 2, calls: &taskCalls, warn: "the node was busy"}
	dir := filepath.Join(t.TempDir(), "dispatched")
	got, err := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, NoWhy: true, NoReport: true, Rounds: runner, Quality: "off",
		attempt: refuseCells(t)}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkTwoRounds(t, dir, got.Map, runner.rounds)
	for _, r := range runner.rounds {
		if mf, err := results.ReadManifest(filepath.Join(r.Dir, "shard-1")); err != nil || mf.Quality != "off" || len(mf.Calibrations) != 0 {
			t.Errorf("round %d's task ran by quality %q with %d calibrations (%v); want the controller's off, none", r.Index, mf.Quality, len(mf.Calibrations), err)
		}
	}
	// Every task's warnings reach the run's manifest, saying where.
	mf, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"round 1, shard-1: the node was busy", "round 1, shard-2: the node was busy", "round 2, shard-2: the node was busy"} {
		if !slices.Contains(mf.Warnings, w) {
			t.Errorf("the run's manifest lacks %q: %q", w, mf.Warnings)
		}
	}
	if taskCalls != localCalls || taskCalls != 18 {
		t.Errorf("the tasks ran %d cells, one machine %d; want 18 each (the budget)", taskCalls, localCalls)
	}
	// summary.csv is not compared: a cell read back has its seed through
	// a float64 (the results package's read-back), one just run has not.
	for _, f := range []string{explore.PointsFile, explore.VerdictsFile, explore.BoundariesFile} {
		a, _ := os.ReadFile(filepath.Join(local.Dir, f))
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between one machine and the dispatched rounds:\n%s\n---\n%s", f, a, b)
		}
	}
}

// checkTwoRounds checks a dispatched exploration of fakeRounds: two
// rounds of 12 and 6 cells, each split between 2 shards as k mod 2 + 1
// (6/6, then 3/3), every cell complete in the run's cells/ and none left
// in the shards.
func checkTwoRounds(t *testing.T, dir string, m *explore.Map, rounds []Round) {
	t.Helper()
	if m == nil || m.Cells != 18 || m.Rounds != 2 {
		t.Fatalf("map: %+v; want 18 cells in 2 rounds", m)
	}
	want := []int{12, 6}
	if len(rounds) != 2 {
		t.Fatalf("rounds dispatched: %+v; want 2", rounds)
	}
	for i, r := range rounds {
		if r.Cells != want[i] || r.Shards != 2 || r.Index != i+1 {
			t.Errorf("round %d: %+v; want %d cells as 2 shards", i+1, r, want[i])
		}
		for s := 1; s <= 2; s++ {
			sh := filepath.Join(r.Dir, "shard-"+string(rune('0'+s)))
			mf, err := results.ReadManifest(sh)
			if err != nil {
				t.Fatalf("round %d shard %d: %v", i+1, s, err)
			}
			if mf.Cells != want[i]/2 || mf.Shard != string(rune('0'+s))+"/2" {
				t.Errorf("round %d shard %d ran %d cells as shard %q; want %d as %d/2", i+1, s, mf.Cells, mf.Shard, want[i]/2, s)
			}
			left, _ := os.ReadDir(filepath.Join(sh, results.CellsDir))
			if len(left) != 0 {
				t.Errorf("round %d shard %d: %d cells not merged", i+1, s, len(left))
			}
		}
	}
	cells, _ := os.ReadDir(filepath.Join(dir, results.CellsDir))
	done := 0
	for _, c := range cells {
		if results.CellDone(filepath.Join(dir, results.CellsDir, c.Name())) {
			done++
		}
	}
	if done != 18 || len(cells) != 18 {
		t.Errorf("run directory: %d cells, %d complete; want 18", len(cells), done)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "summary.csv"))
	if n := strings.Count(strings.TrimSpace(string(sum)), "\n"); n != 18 {
		t.Errorf("summary.csv has %d rows; want 18", n)
	}
}

// The why's ablations go through the same runner: each removal's run
// dispatches its rounds under ablation/NAME/rounds/, and the
// explanation is the one a single machine gives.
func TestDispatchedAblationsExplainAsOneMachine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "e.yaml")
	src := strings.NewReplacer("budget: 18", "budget: 120", "resolution: 1%", "resolution: 2.5%", "protocols:", "link: {jitter: 5ms}\nprotocols:").Replace(fakeRounds)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := 0
	local, err := Exploration{NameOrFile: file, Out: filepath.Join(t.TempDir(), "local"), NoCalibration: true, NoReport: true,
		attempt: jitterFlipAttempt(&calls, map[string]uint64{})}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if local.Map.Why == nil || local.Map.Why.Cells == 0 {
		t.Fatalf("one machine measured no ablation:\n%s", local.Map.Answer())
	}
	runner := &inProcessRounds{shards: 3, calls: &calls, attempt: jitterFlipAttempt(&calls, map[string]uint64{})}
	dir := filepath.Join(t.TempDir(), "dispatched")
	got, err := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, NoReport: true, Rounds: runner,
		attempt: refuseCells(t)}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Map.Why == nil || got.Map.Why.Cells != local.Map.Why.Cells {
		t.Fatalf("the dispatched why: %+v; one machine's spent %d cells", got.Map.Why, local.Map.Why.Cells)
	}
	if rounds, _ := filepath.Glob(filepath.Join(dir, AblationDir, "no-jitter", RoundsDir, "*", "shard-1")); len(rounds) == 0 {
		t.Error("no round of the no-jitter run was dispatched")
	}
	for _, f := range []string{explore.WhyFile, explore.PointsFile, explore.BoundariesFile} {
		a, _ := os.ReadFile(filepath.Join(local.Dir, f))
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between one machine and the dispatched rounds:\n%s\n---\n%s", f, a, b)
		}
	}
}

// A task that completes no cell leaves the round's cells missing: the
// controller says which, and runs none itself.
func TestARoundsMissingCellsAreNamed(t *testing.T) {
	file := filepath.Join(t.TempDir(), "e.yaml")
	if err := os.WriteFile(file, []byte(fakeRounds), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Exploration{NameOrFile: file, Out: filepath.Join(t.TempDir(), "run"), NoCalibration: true, NoWhy: true, NoReport: true,
		Rounds: lazyRounds{}, attempt: refuseCells(t)}.Execute(context.Background())
	if err == nil || !strings.Contains(err.Error(), "12 of 12 cells were not completed by the round's tasks") || !strings.Contains(err.Error(), "x_ethernet_quic_loss=0-_r1") {
		t.Errorf("err = %v; want the 12 missing cells named", err)
	}
}

type lazyRounds struct{}

func (lazyRounds) Tasks() int                            { return 3 }
func (lazyRounds) RunRound(context.Context, Round) error { return nil }

// fakeKubectlEnv names the directory where TestFakeKubectl, standing in
// for kubectl, keeps each job's condition.
const fakeKubectlEnv = "TLAB_TEST_FAKE_KUBECTL"

// TestFakeKubectl is kubectl for TestKubernetesIndexedJobsRunTheRounds:
// `apply -f FILE` reads the Indexed Job and runs each index's pod
// command as the job controller would (the container's command and
// arguments, $(JOB_COMPLETION_INDEX) expanded and in the environment),
// one after another; `get job NAME -o jsonpath=...` prints the job's
// condition (Complete or Failed).
func TestFakeKubectl(t *testing.T) {
	state := os.Getenv(fakeKubectlEnv)
	if state == "" {
		t.Skip("kubectl of TestKubernetesIndexedJobsRunTheRounds")
	}
	args := flag.Args()
	switch {
	case len(args) == 3 && args[0] == "apply" && args[1] == "-f":
		b, err := os.ReadFile(args[2])
		if err != nil {
			t.Fatal(err)
		}
		var job batchv1.Job
		if err := yaml.UnmarshalStrict(b, &job); err != nil {
			t.Fatal(err)
		}
		if *job.Spec.CompletionMode != batchv1.IndexedCompletion {
			t.Fatalf("completion mode %s, want Indexed", *job.Spec.CompletionMode)
		}
		cond := "Complete"
		c := job.Spec.Template.Spec.Containers[0]
		for i := range int(*job.Spec.Completions) {
			idx := strconv.Itoa(i)
			var argv []string
			for _, a := range append(slices.Clone(c.Command), c.Args...) {
				argv = append(argv, strings.ReplaceAll(a, "$(JOB_COMPLETION_INDEX)", idx))
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+idx, roundTaskEnv+"=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Logf("index %s: %v: %s", idx, err, out)
				cond = "Failed"
			}
		}
		if err := os.WriteFile(filepath.Join(state, job.Name), []byte(cond), 0o644); err != nil {
			t.Fatal(err)
		}
	case len(args) == 5 && args[0] == "get" && args[1] == "job":
		b, err := os.ReadFile(filepath.Join(state, args[2]))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Print(string(b) + "\n")
	default:
		t.Fatalf("kubectl %q: not what tlab asks", args)
	}
}

// Each round an Indexed Job: the manifest tlab writes, its pods' command
// run per index by a stand-in for the job controller (TestFakeKubectl),
// the controller polling the job's condition and merging the shards: the
// same two rounds and map as in process.
func TestKubernetesIndexedJobsRunTheRounds(t *testing.T) {
	if os.Getenv(roundTaskEnv) != "" || os.Getenv(fakeKubectlEnv) != "" {
		t.Skip("inside a task")
	}
	file := filepath.Join(t.TempDir(), "e.yaml")
	if err := os.WriteFile(file, []byte(fakeRounds), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	volume := t.TempDir()
	kubectl := filepath.Join(t.TempDir(), "kubectl")
	script := fmt.Sprintf("#!/bin/sh\nexec %s -test.run=^TestFakeKubectl$ \"$@\"\n", exe)
	if err := os.WriteFile(kubectl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	runner := &recordingRounds{RoundRunner: KubectlRounds{Kubectl: kubectl, Env: append(os.Environ(), fakeKubectlEnv+"="+t.TempDir()), Poll: 50 * time.Millisecond,
		Spec: cluster.Spec{Name: "tlab-test", Shards: 2, Image: "tlab:test", ResultsDir: volume,
			Program: []string{exe, "-test.run=^TestSlurmRoundTask$", "-test.timeout=2m"}}}}
	dir := filepath.Join(volume, "run")
	got, err := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, NoWhy: true, NoReport: true, Rounds: runner,
		attempt: refuseCells(t)}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkTwoRounds(t, dir, got.Map, runner.rounds)
	for _, r := range runner.rounds {
		b, err := os.ReadFile(filepath.Join(r.Dir, "job.yaml"))
		if err != nil || !strings.Contains(string(b), "completions: 2") || !strings.Contains(string(b), "- --round\n        - "+r.Dir+"\n") {
			t.Errorf("round %d's job.yaml (%v):\n%s", r.Index, err, b)
		}
	}
	// A run directory off the volume is refused before any job.
	_, err = Exploration{NameOrFile: file, Out: filepath.Join(t.TempDir(), "off"), NoCalibration: true, NoWhy: true, NoReport: true, Rounds: runner,
		attempt: refuseCells(t)}.Execute(context.Background())
	if err == nil || !strings.Contains(err.Error(), "where the pods mount the results' volume") {
		t.Errorf("err = %v; want the run directory refused off the volume", err)
	}
}

// "no handshakes" sets what the scenario's stacks leave off and honour
// (tlab protocols: quic honours resumption and zero_rtt, mqtt-tls
// resumption only, tcp and udp neither; resumption is on by default,
// zero_rtt off), and the cell with it has it on.
func TestNoHandshakesResumesWhatTheStacksCan(t *testing.T) {
	for _, c := range []struct {
		protocols, settings string
		want                string // the settings, or the note of an absent removal
	}{
		{"[quic, tcp]", "", "settings.zero_rtt=true"},
		{"[quic, tcp]", "settings: {resumption: false}", "settings.resumption=true settings.zero_rtt=true"},
		{"[mqtt-tls, mqtt-tcp]", "settings: {resumption: false}", "settings.resumption=true"},
		{"[mqtt-tls, mqtt-tcp]", "", "the stacks already resume their sessions"},
		{"[tcp, udp]", "", "no stack has a TLS session to resume"},
	} {
		workload := "workload: {type: periodic, interval: 10ms}"
		if strings.HasPrefix(c.protocols, "[mqtt") {
			workload = "workload: {type: pubsub}"
		}
		y := fmt.Sprintf("name: h\nprofiles: [ethernet]\nprotocols: %s\n%s\ncount: 5\n%s\n", c.protocols, workload, c.settings)
		file := filepath.Join(t.TempDir(), "h.yaml")
		if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := LoadScenario(file, nil)
		if err != nil {
			t.Fatal(err)
		}
		var a explore.Ablation
		for _, x := range ablationsFor(sc, nil) {
			if x.Name == "no handshakes" {
				a = x
			}
		}
		got := a.Note
		if !a.Absent {
			got = settingsText(a.Settings)
			cell, err := plan.CompileAt(sc, sc.Profiles[0], sc.Protocols[0], 1, asParams(a.Settings))
			if err != nil {
				t.Fatal(err)
			}
			if s := cell.Settings; !s.Resumption {
				t.Errorf("%s %s: the cell without handshakes does not resume", c.protocols, c.settings)
			}
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %s: no handshakes = %q, want %q", c.protocols, c.settings, got, c.want)
		}
	}
}
