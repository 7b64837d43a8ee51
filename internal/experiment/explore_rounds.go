package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/advise"
	"tlab/internal/cluster"
	"tlab/internal/emu"
	"tlab/internal/plan"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/stacks"
)

// An exploration's round on many machines: the controller (tlab explore
// --slurm or --k8s) writes the round's cells into a directory of the run
// (rounds/NNN: round.json and the scenario), a cluster engine runs them
// as the shards of a sharded run do (a Slurm array, a Kubernetes Indexed
// Job: task I of N runs cells k with k mod N = I-1 into rounds/NNN/shard-I),
// and the controller moves each shard's complete cells into the run's
// cells/, where the round's sweep reads them back as done. The search
// then decides the next round from the merged results, as on one machine.

// RoundsDir holds an exploration's dispatched rounds, in its run directory.
const RoundsDir = "rounds"

// RoundFile lists a dispatched round's cells.
const RoundFile = "round.json"

// Round is one batch of cells to run elsewhere.
type Round struct {
	// Dir is the round's directory (on the file system the tasks share):
	// round.json and scenario.yaml in it, each task's run directory
	// written into Dir/shard-I.
	Dir string
	// Index numbers the run's rounds from 1; Cells is how many it holds;
	// Shards is how many tasks it asks for (at most Cells).
	Index, Cells, Shards int
}

// RoundRunner runs a round's cells as N tasks and returns when they have
// ended (each task's cells are then complete in its shard directory, or
// missing, which the controller reports).
type RoundRunner interface {
	RunRound(ctx context.Context, r Round) error
	// Tasks is how many tasks a round asks for at most.
	Tasks() int
}

// roundCell names one cell of a round: enough for a task to rebuild it
// (scenario.CellAt), and its id, which the task checks.
type roundCell struct {
	ID       string          `json:"id"`
	Profile  string          `json:"profile"`
	Protocol string          `json:"protocol"`
	Rep      int             `json:"rep"`
	Params   []results.Param `json:"params"`
}

type roundFile struct {
	Round int `json:"round"`
	// Quality and NoCalibration are the controller's (tlab explore
	// --quality, --no-calibration): every task runs its cells by them.
	Quality       string      `json:"quality,omitempty"`
	NoCalibration bool        `json:"no_calibration,omitempty"`
	Cells         []roundCell `json:"cells"`
}

// dispatch runs pending cells of the run in dir through the runner, then
// moves every shard's complete cells into dir's cells/. A cell no task
// completed is an error naming it (a resume dispatches it again).
//
// sc is the scenario the cells were made from (scenario.CellAt), which
// the tasks make them from again; base is the controller's sweep (its
// directory, quality rule and calibration choice).
//
// It returns the tasks' warnings (their manifests': disturbed cells,
// other runs on the node, a calibration that failed), each prefixed with
// its round and shard, for the run's manifest.
func dispatch(ctx context.Context, runner RoundRunner, sc *scenario.Scenario, base Sweep, pending []plan.Cell) (warnings []string, err error) {
	dir, log := base.Dir, base.Log
	if err := results.PrepareOut(dir); err != nil {
		return nil, err
	}
	if err := results.MkdirAll(filepath.Join(dir, RoundsDir)); err != nil {
		return nil, err
	}
	// A fresh directory per round, also after a resume.
	index := 1
	for ; ; index++ {
		if _, err := os.Stat(roundDir(dir, index)); os.IsNotExist(err) {
			break
		}
	}
	rd := roundDir(dir, index)
	if err := results.Mkdir(rd); err != nil {
		return nil, err
	}
	rf := roundFile{Round: index, Quality: base.Quality.Mode, NoCalibration: base.SkipCalibration}
	for _, c := range pending {
		rf.Cells = append(rf.Cells, roundCell{ID: c.ID, Profile: c.Profile, Protocol: c.Protocol, Rep: c.Rep, Params: c.Params})
	}
	b, err := json.MarshalIndent(rf, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := results.WriteFileAtomic(filepath.Join(rd, RoundFile), b); err != nil {
		return nil, err
	}
	y, err := sc.YAML()
	if err != nil {
		return nil, err
	}
	if err := results.WriteFileAtomic(filepath.Join(rd, results.ScenarioFile), y); err != nil {
		return nil, err
	}
	shards := min(runner.Tasks(), len(pending))
	if log != nil {
		fmt.Fprintf(log, "round %d: %d cells as %d tasks, in %s\n", index, len(pending), shards, rd)
	}
	runErr := runner.RunRound(ctx, Round{Dir: rd, Index: index, Cells: len(pending), Shards: shards})
	shardDirs, _ := filepath.Glob(filepath.Join(rd, "shard-*"))
	for _, sh := range shardDirs {
		if mf, err := results.ReadManifest(sh); err == nil {
			for _, w := range mf.Warnings {
				warnings = append(warnings, fmt.Sprintf("round %d, %s: %s", index, filepath.Base(sh), w))
			}
		}
	}
	missing, err := mergeRound(dir, rd, pending)
	if err != nil {
		return warnings, errors.Join(runErr, err)
	}
	if len(missing) > 0 {
		return warnings, errors.Join(runErr, fmt.Errorf("%d of %d cells were not completed by the round's tasks (%s; their output is in %s); continue with --resume",
			len(missing), len(pending), strings.Join(first(missing, 4), ", "), rd))
	}
	if runErr != nil && log != nil {
		// Every cell is there: a task's late failure costs nothing.
		fmt.Fprintf(log, "warning: round %d: %v (every cell is complete)\n", index, runErr)
	}
	return warnings, nil
}

func roundDir(dir string, index int) string {
	return filepath.Join(dir, RoundsDir, fmt.Sprintf("%03d", index))
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "...")
	}
	return s
}

// mergeRound moves each pending cell that a shard completed into the
// run's cells/ and returns the ids of those no shard completed.
func mergeRound(dir, rd string, pending []plan.Cell) (missing []string, err error) {
	shards, err := filepath.Glob(filepath.Join(rd, "shard-*"))
	if err != nil {
		return nil, err
	}
	if err := results.MkdirAll(filepath.Join(dir, results.CellsDir)); err != nil {
		return nil, err
	}
	for _, c := range pending {
		to := results.CellDir(dir, c.ID)
		if results.CellDone(to) {
			continue
		}
		found := false
		for _, sh := range shards {
			from := results.CellDir(sh, c.ID)
			if !results.CellDone(from) {
				continue
			}
			if err := os.RemoveAll(to); err != nil {
				return nil, err
			}
			if err := os.Rename(from, to); err != nil {
				return nil, fmt.Errorf("merging round %s: %w", filepath.Base(rd), err)
			}
			found = true
			break
		}
		if !found {
			missing = append(missing, c.ID)
		}
	}
	return missing, nil
}

// RoundTask is one task of a dispatched round (tlab explore --round DIR
// --shard I/N): its share of the round's cells, run as an ordinary
// (sharded) sweep into DIR/shard-I; a retried task resumes it.
type RoundTask struct {
	Dir   string
	Shard Shard
	// AllowCommands must be set when the scenario's stacks name commands.
	AllowCommands bool
	NoCalibration bool
	Quality       string
	Progress      func(cellrun.Progress)
	Log           io.Writer

	attempt   func(ctx context.Context, spec cellrun.CellSpec, sink func(results.Record) error, progress func(cellrun.Progress)) (cellrun.CellResult, error)
	calibrate func(ctx context.Context, m *results.Manifest, emulator emu.EngineOptions) error
}

// Run runs the task's cells.
func (t RoundTask) Run(ctx context.Context) error {
	b, err := os.ReadFile(filepath.Join(t.Dir, RoundFile))
	if err != nil {
		return cellrun.InputErr(fmt.Errorf("a round's directory: %w", err))
	}
	var rf roundFile
	if err := json.Unmarshal(b, &rf); err != nil {
		return cellrun.InputErr(fmt.Errorf("%s: %w", filepath.Join(t.Dir, RoundFile), err))
	}
	sc, err := scenario.Load(filepath.Join(t.Dir, results.ScenarioFile))
	if err != nil {
		return cellrun.InputErr(err)
	}
	if stacks.Any(sc) && !t.AllowCommands {
		return cellrun.InputErr(errors.New("the scenario's stacks name commands; the round's tasks need --allow-commands"))
	}
	var cells []plan.Cell
	for _, rc := range rf.Cells {
		c, err := plan.CompileAt(sc, rc.Profile, rc.Protocol, rc.Rep, rc.Params)
		if err != nil {
			return cellrun.InputErr(fmt.Errorf("cell %s: %w", rc.ID, err))
		}
		if c.ID != rc.ID {
			return cellrun.InputErr(fmt.Errorf("cell %s is %s here: the controller's tlab and this one differ", rc.ID, c.ID))
		}
		cells = append(cells, c)
	}
	if t.Shard.N == 0 {
		t.Shard = Shard{I: 1, N: 1}
	}
	if t.Quality == "" {
		t.Quality = rf.Quality
	}
	t.NoCalibration = t.NoCalibration || rf.NoCalibration
	out := filepath.Join(t.Dir, "shard-"+strconv.Itoa(t.Shard.I))
	_, err = os.Stat(filepath.Join(out, results.ScenarioFile))
	sw := Sweep{Scenario: sc, Dir: out, Cells: cells, Shard: t.Shard, Resume: err == nil, SkipCalibration: t.NoCalibration,
		Requirements: advise.RequirementsOf(sc), Quality: cellrun.Quality{Mode: t.Quality}, Progress: t.Progress, Log: t.Log,
		attempt: t.attempt, calibrate: t.calibrate}
	_, err = sw.Run(ctx)
	return err
}

// SlurmRounds runs each round as a Slurm job array: it writes the
// round's sbatch script (cluster.Slurm with the round) into the round's
// directory and submits it with sbatch --wait, which returns when every
// task of the array has ended.
type SlurmRounds struct {
	// Spec is the job's template: Name, Shards (tasks per round), CPUs,
	// Memory, Parallelism, Retries, Program; Round is set per round.
	Spec cluster.Spec
	// Sbatch is the sbatch command (default: sbatch on the PATH).
	Sbatch string
	// Env, when set, is sbatch's environment (default: this process's).
	Env []string
}

// Tasks is the array's size.
func (s SlurmRounds) Tasks() int { return s.Spec.Shards }

// roundSpec is a cluster's template for round r: its directory, its
// shards, no more running at once than it has, named by round.
func roundSpec(spec cluster.Spec, r Round) cluster.Spec {
	spec.Round, spec.Shards = r.Dir, r.Shards
	spec.Parallelism = min(spec.Parallelism, r.Shards)
	if spec.Name == "" {
		spec.Name = "tlab-round"
	}
	spec.Name = cluster.NameFor(fmt.Sprintf("%s-r%d", spec.Name, r.Index))
	return spec
}

// RunRound submits the round's array and waits for it.
func (s SlurmRounds) RunRound(ctx context.Context, r Round) error {
	script, err := cluster.Slurm(roundSpec(s.Spec, r))
	if err != nil {
		return err
	}
	file := filepath.Join(r.Dir, "round.sbatch")
	if err := results.WriteFileAtomic(file, []byte(script)); err != nil {
		return err
	}
	sbatch := s.Sbatch
	if sbatch == "" {
		sbatch = "sbatch"
	}
	cmd := exec.CommandContext(ctx, sbatch, "--wait", "--parsable", file)
	cmd.Env = s.Env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("sbatch --wait %s: %w: %s", file, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// KubectlRounds runs each round as a Kubernetes Indexed Job
// (cluster.Job with the round): it writes the round's job.yaml into the
// round's directory, applies it with kubectl, and polls the job until
// its Complete or Failed condition. The run directory must be on the
// volume (Spec.Claim) mounted at Spec.ResultsDir, in the controller's
// file system as in the pods'.
type KubectlRounds struct {
	// Spec is the job's template (Name, Shards, Image, Claim,
	// ResultsDir, CPUs, Memory, Retries, Program); Round is set per round.
	Spec cluster.Spec
	// Kubectl is the kubectl command (default: kubectl on the PATH).
	Kubectl string
	// Env, when set, is kubectl's environment.
	Env []string
	// Poll is how often the job's conditions are read (default 5 s).
	Poll time.Duration
}

// Tasks is the job's completions.
func (k KubectlRounds) Tasks() int { return k.Spec.Shards }

// RunRound applies the round's Indexed Job and waits for it to end.
func (k KubectlRounds) RunRound(ctx context.Context, r Round) error {
	spec := k.Spec.WithDefaults()
	rel, err := filepath.Rel(spec.ResultsDir, r.Dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || !filepath.IsAbs(r.Dir) {
		return fmt.Errorf("the round's directory %s is not under %s, where the pods mount the results' volume: give --out under it", r.Dir, spec.ResultsDir)
	}
	doc, err := cluster.JobYAML(roundSpec(spec, r))
	if err != nil {
		return err
	}
	file := filepath.Join(r.Dir, "job.yaml")
	if err := results.WriteFileAtomic(file, doc); err != nil {
		return err
	}
	kubectl := k.Kubectl
	if kubectl == "" {
		kubectl = "kubectl"
	}
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, kubectl, args...)
		cmd.Env = k.Env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return out.String(), nil
	}
	if _, err := run("apply", "-f", file); err != nil {
		return err
	}
	poll := k.Poll
	if poll == 0 {
		poll = 5 * time.Second
	}
	for {
		out, err := run("get", "job", spec.Name, "-o", `jsonpath={.status.conditions[?(@.status=="True")].type}`)
		if err != nil {
			return err
		}
		conds := strings.Fields(out)
		switch {
		case slices.Contains(conds, "Complete"):
			return nil
		case slices.Contains(conds, "Failed"):
			return fmt.Errorf("job %s failed (kubectl describe job %s says why)", spec.Name, spec.Name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
