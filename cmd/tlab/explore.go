package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"tlab/internal/cellrun"

	"tlab/internal/advise"
	"tlab/internal/cluster"
	"tlab/internal/experiment"
	"tlab/internal/explore"
	"tlab/internal/report"
	"tlab/internal/scenario"
	"tlab/internal/stacks"
	"tlab/internal/units"
)

// runExplore searches a scenario's explore: section (experiment.Exploration)
// and prints its rounds and the map's answer.
func runExplore(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("explore", "explore FILE|PRESET [--budget CELLS|DURATION] [--set key=value ...] [--out DIR] [--no-why] [--json]\n              [--slurm --shards N | --k8s --image IMAGE --shards N]\n       tlab explore --resume DIR\n       tlab explore --against-grid GRID_DIR MAP_DIR   (the map beside the full grid's decisions)\n       tlab explore --round DIR --shard auto/N   (one task of a round, run by Slurm or Kubernetes)\n\nWhere does the answer change? Search the scenario's explore: section (parameters with ranges,\nsuch as link.loss: 0%..5%): a coarse grid first, then points where neighbours' verdicts disagree,\neach repeated only until its comparisons are decided by an always-valid sequential test. Every cell\nis an ordinary cell of the run directory (tlab report, tlab stats and --resume work on it); the map\nis explore-points.csv, explore-boundaries.csv and the report's explore_map. Each boundary is then\nexplained by ablation: its neighbours measured again without loss, jitter, the queue or full handshakes, each removal\nits own run under ablation/; explore-why.csv says which removal moves it. With --slurm each round's\ncells run as a Slurm job array of N tasks (sbatch --wait), with --k8s as a Kubernetes Indexed Job,\nthe run directory on the nodes' shared file system; this process merges each round and decides the next. See docs/guide.md.", stderr)
	var sets listFlag
	fs.Var(&sets, "set", "override a scenario field, e.g. workload.interval=10ms or explore.max_repetitions=6 (repeatable)")
	budget := fs.String("budget", "", "what the search may spend: a number of cells (200) or a duration (30m); replaces the section's")
	out := fs.String("out", "", "results directory (default results/NAME-TIME)")
	resume := fs.String("resume", "", "continue the interrupted exploration in DIR")
	noCal := fs.Bool("no-calibration", false, "skip the emulator calibration recorded in the manifest")
	noReport := fs.Bool("no-report", false, "do not write report.html")
	quality := fs.String("quality", "", "re-run cells the host disturbed: normal (default: up to 3 attempts), strict (5, tighter), off")
	why := fs.Bool("why", true, "explain each boundary by ablation: re-measure its neighbours without loss, jitter, the queue or full handshakes (ablation/ in the run), within the budget's rest")
	noWhy := fs.Bool("no-why", false, "do not explain the boundaries (the same as --why=false)")
	asJSON := fs.Bool("json", false, "print the map (explore.json's facts and every point's verdicts) as JSON")
	slurm := fs.Bool("slurm", false, "run each round's cells as a Slurm job array (sbatch --wait); --out must be on the nodes' shared file system")
	shards := fs.Int("shards", 4, "with --slurm or --k8s: tasks per round (each on a node of its own)")
	cpus := fs.Int("cpus", cluster.DefaultCPUs, "with --slurm or --k8s: whole CPUs per task")
	memory := fs.String("memory", cluster.DefaultMemory, "with --slurm or --k8s: memory per task")
	program := fs.String("program", "tlab", "with --slurm or --k8s: the tlab executable on the nodes (in the image)")
	k8s := fs.Bool("k8s", false, "run each round's cells as a Kubernetes Indexed Job (kubectl apply, then its condition); --out must be under --results, on the volume the pods mount")
	image := fs.String("image", "", "with --k8s: the container image with tlab")
	claim := fs.String("claim", cluster.DefaultClaim, "with --k8s: the PersistentVolumeClaim of the results")
	resultsDir := fs.String("results", cluster.DefaultResultsDir, "with --k8s: where the volume is mounted, in the pods and here")
	round := fs.String("round", "", "run one task of a dispatched round: the round's directory (written by tlab explore --slurm)")
	shard := fs.String("shard", "", "with --round: the task's shard I/N, or auto/N (from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)")
	allowCommands := fs.Bool("allow-commands", false, "run the commands the scenario's stacks name (every task of --slurm/--k8s, or this --round task)")
	againstGrid := fs.String("against-grid", "", "measure nothing: compare the exploration in the directory given (its map) with GRID, an ordinary run of the full grid over the same range, stacks and requirements; prints both side by side and writes explore-vs-grid.csv into the exploration (scripts/explore-vs-grid runs both)")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if *againstGrid != "" {
		if len(pos) != 1 {
			fmt.Fprintln(stderr, "tlab explore: --against-grid GRID needs the exploration's directory: tlab explore --against-grid GRID_DIR MAP_DIR")
			return exitUsage
		}
		g, err := experiment.CompareWithGrid(*againstGrid, pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "tlab explore: %v\n", err)
			return exitFailure
		}
		if err := g.Write(pos[0]); err != nil {
			fmt.Fprintf(stderr, "tlab explore: %v\n", err)
			return exitFailure
		}
		fmt.Fprint(stdout, g.Text())
		fmt.Fprintf(stdout, "\nRow by row: %s\n", filepath.Join(pos[0], experiment.GridFile))
		return exitOK
	}
	if *round != "" {
		return runExploreRound(ctx, *round, *shard, *allowCommands, *noCal, *quality, stderr)
	}
	if (len(pos) == 1) == (*resume != "") {
		fmt.Fprintln(stderr, "tlab explore: give a scenario file or preset, or --resume DIR")
		return exitUsage
	}
	ex := experiment.Exploration{Sets: sets, Out: *out, Resume: *resume, NoCalibration: *noCal, NoReport: *noReport, NoWhy: *noWhy || !*why, Render: report.Render, Quality: *quality,
		Progress: progressPrinter(stderr), Log: stderr}
	if len(pos) == 1 {
		ex.NameOrFile = pos[0]
	}
	var slurmRounds *experiment.SlurmRounds
	var kubeRounds *experiment.KubectlRounds
	if *slurm && *k8s {
		fmt.Fprintln(stderr, "tlab explore: give --slurm or --k8s, not both")
		return exitUsage
	}
	if (*slurm || *k8s) && *shards < 1 {
		fmt.Fprintln(stderr, "tlab explore: --shards must be at least 1")
		return exitUsage
	}
	if *k8s {
		if *image == "" {
			fmt.Fprintln(stderr, "tlab explore: --k8s needs --image, the container image with tlab (see Containerfile)")
			return exitUsage
		}
		kubeRounds = &experiment.KubectlRounds{Spec: cluster.Spec{Shards: *shards, CPUs: *cpus, Memory: *memory, Image: *image,
			Claim: *claim, ResultsDir: *resultsDir, Retries: cluster.DefaultRetries, Program: []string{*program}}}
		ex.Rounds = kubeRounds
	}
	if *slurm {
		slurmRounds = &experiment.SlurmRounds{Spec: cluster.Spec{Shards: *shards, CPUs: *cpus, Memory: *memory,
			Retries: cluster.DefaultRetries, Program: []string{*program}, AllowCommands: *allowCommands}}
		ex.Rounds = slurmRounds
	}
	if *budget != "" {
		b, err := explore.ParseBudget(*budget)
		if err != nil {
			fmt.Fprintf(stderr, "tlab explore: --budget %v\n", err)
			return exitUsage
		}
		ex.Budget = &b
	}
	ex.Ready = func(r experiment.ExploreReady) error {
		// A controller whose rounds run on a cluster makes no namespaces:
		// its tasks need the privileges, on their nodes.
		if ex.Rounds == nil {
			if code, handled := ensurePrivileges(append([]string{"explore"}, args...), stderr); handled {
				return exitCode(code)
			}
		}
		if slurmRounds != nil {
			slurmRounds.Spec.Name = cluster.NameFor(r.Scenario.Name + "-" + filepath.Base(r.Dir))
			// A scenario file's commands run on every node: as tlab k8s,
			// only with the user's word.
			if lines := stacks.Lines(r.Scenario); len(lines) > 0 && !*allowCommands && !experiment.IsPreset(ex.NameOrFile) {
				fmt.Fprintf(stderr, "tlab explore: the scenario names commands that every task would run:\n  %s\nRead them; to run them, give --allow-commands.\n", strings.Join(lines, "\n  "))
				return exitCode(exitUsage)
			}
			slurmRounds.Spec.AllowCommands = stacks.Any(r.Scenario)
		}
		if kubeRounds != nil {
			kubeRounds.Spec.Name = cluster.NameFor(r.Scenario.Name + "-" + filepath.Base(r.Dir))
			if lines := stacks.Lines(r.Scenario); len(lines) > 0 && !*allowCommands && !experiment.IsPreset(ex.NameOrFile) {
				fmt.Fprintf(stderr, "tlab explore: the scenario names commands that every pod would run:\n  %s\nRead them; to run them, give --allow-commands.\n", strings.Join(lines, "\n  "))
				return exitCode(exitUsage)
			}
			kubeRounds.Spec.AllowCommands = stacks.Any(r.Scenario)
		}
		var names []string
		for _, p := range r.Config.Params {
			names = append(names, fmt.Sprintf("%s %s..%s", p.Path, p.Format(p.Low), p.Format(p.High)))
		}
		spend := "until the map is decided"
		switch b := r.Config.Budget; {
		case b.Cells > 0:
			spend = "at most " + units.Count(b.Cells, "cell")
		case b.Duration > 0:
			spend = "for at most " + b.Duration.String()
		}
		fmt.Fprintf(stderr, "%s: exploring %v with %v, %s, %d to %d repetitions a point, into %s\n",
			r.Scenario.Name, names, r.Scenario.Protocols, spend, r.Config.MinReps, r.Config.MaxReps, r.Dir)
		return nil
	}
	ex.Round = func(round int, reqs []explore.Request) {
		clearProgress(stderr)
		fmt.Fprintf(stderr, "round %d: %s\n", round, units.Count(len(reqs), "repetition"))
	}
	res, err := ex.Execute(ctx)
	clearProgress(stderr)
	var exit exitCode
	switch {
	case errors.As(err, &exit):
		return int(exit)
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "tlab explore: interrupted; every complete cell is kept and nothing is left running.\nContinue with: tlab explore --resume %s\n", res.Dir)
		return exitCanceled
	case errors.Is(err, syscall.ENOSPC):
		fmt.Fprintf(stderr, "tlab explore: the disk holding %s is full: %v\nContinue with: tlab explore --resume %s\n", res.Dir, err, res.Dir)
		return exitError
	case errors.Is(err, cellrun.ErrInput):
		fmt.Fprintf(stderr, "tlab explore: %v\n", err)
		return exitUsage
	case errors.Is(err, experiment.ErrReport):
		fmt.Fprintf(stderr, "tlab explore: %v\n", err)
		return exitError
	case err != nil:
		return errorExit(stderr, err)
	}
	if *asJSON {
		b, err := os.ReadFile(filepath.Join(res.Dir, explore.MapFile))
		if err != nil {
			return errorExit(stderr, err)
		}
		var facts map[string]any
		if err := json.Unmarshal(b, &facts); err != nil {
			return errorExit(stderr, err)
		}
		facts["directory"] = res.Dir
		return writeJSON(stdout, facts)
	}
	fmt.Fprintln(stdout, "THE MAP")
	fmt.Fprint(stdout, res.Map.Answer())
	files := []string{"report.html", explore.PointsFile, explore.BoundariesFile, explore.AnswerFile}
	if res.Map.Why != nil {
		files = append(files, explore.WhyFile, experiment.AblationDir+"/")
	}
	fmt.Fprintf(stdout, "\nResults in %s: %s, summary.csv, records.csv\n", res.Dir, strings.Join(files, ", "))
	return exitOK
}

// runExploreRound is one task of a round that tlab explore --slurm
// dispatched: its share of the round's cells into the round's shard-I.
func runExploreRound(ctx context.Context, dir, shard string, allowCommands, noCal bool, quality string, stderr io.Writer) int {
	s, err := experiment.ShardFromEnv(shard, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "tlab explore --round: %v\n", err)
		return exitUsage
	}
	task := experiment.RoundTask{Dir: dir, AllowCommands: allowCommands, NoCalibration: noCal, Quality: quality, Progress: progressPrinter(stderr), Log: stderr}
	if s != "" {
		if task.Shard, err = experiment.ParseShard(s); err != nil {
			fmt.Fprintf(stderr, "tlab explore --round: %v\n", err)
			return exitUsage
		}
	}
	if code, handled := ensurePrivileges([]string{"explore", "--round", dir, "--shard", s}, stderr); handled {
		return code
	}
	err = task.Run(ctx)
	clearProgress(stderr)
	switch {
	case errors.Is(err, cellrun.ErrInput):
		fmt.Fprintf(stderr, "tlab explore --round: %v\n", err)
		return exitUsage
	case err != nil:
		return errorExit(stderr, err)
	}
	return exitOK
}

// exploreLine says what tlab explore would search in a scenario with an
// explore: section ("" without one).
func exploreLine(sc *scenario.Scenario) string {
	if sc.SectionNode("explore") == nil {
		return ""
	}
	spec, err := explore.SpecOf(sc)
	if err != nil {
		return ""
	}
	cfg := spec.Config(sc.Protocols, advise.RequirementsOf(sc))
	var names []string
	for _, p := range cfg.Params {
		names = append(names, fmt.Sprintf("%s %s..%s", p.Path, p.Format(p.Low), p.Format(p.High)))
	}
	spend := "until decided"
	switch b := cfg.Budget; {
	case b.Cells > 0:
		spend = "at most " + units.Count(b.Cells, "cell")
	case b.Duration > 0:
		spend = "for at most " + b.Duration.String()
	}
	return fmt.Sprintf("explore: %s, at most %d points of %d to %d repetitions, %s (tlab explore runs it; tlab run runs the cells above)", strings.Join(names, " and "), cfg.MaxPoints, cfg.MinReps, cfg.MaxReps, spend)
}
