package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/advise"
	"tlab/internal/experiment"
	"tlab/internal/invoker"
	"tlab/internal/plan"
	"tlab/internal/qoo"
	"tlab/internal/report"
	"tlab/internal/results"
	"tlab/internal/stacks"
	"tlab/internal/units"
	"tlab/scenarios"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// runOptions say what runScenario runs and where.
type runOptions struct {
	// adhocDoc is an ad-hoc run's scenario document (built with sets);
	// otherwise nameOrFile names a file or preset, or resume a directory.
	adhocDoc           []byte
	nameOrFile, resume string
	sets               []string
	out                string
	noCal, noReport    bool
	asJSON             bool
	// adhoc runs without --out go into a directory removed at the end.
	adhoc bool
	// quality is the rule that re-runs disturbed cells ("" keeps the
	// run's own on a resume, and means normal otherwise).
	quality string
	// requireCal refuses to run when the opening calibration fails.
	requireCal bool
	// shard is "I/N" to run one shard of the cells (or "auto/N": the
	// cluster engine's task index picks I).
	shard string
	// resumeExisting continues the run already in out, if there is one
	// (a retried cluster task).
	resumeExisting bool
	// remote measures across a real path to an agent; replay also on a
	// recording of it.
	remote *cellrun.RemoteTarget
	replay string
	// require are the application's requirements: the answer opens the
	// output.
	require []advise.Requirement
	// serve is the address of the run's live view ("" for none).
	serve string
	// privilegesChecked says the caller (a suite) checked privileges
	// once, before its first part.
	privilegesChecked bool
	// allowCommands lets a scenario file's or a resumed run's own stacks
	// run their commands (--allow-commands).
	allowCommands bool
}

// exitCode is an error that carries the exit code the command line
// returns for it (the privilege check's).
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

// runScenario runs (or resumes) a scenario into a run directory through
// experiment.Run, and prints its plan, progress and table.
func runScenario(ctx context.Context, o runOptions, args []string, stdout, stderr io.Writer) int {
	var stopServing func()
	commandsAs := invoker.Find()
	run := experiment.Run{
		AllowCommands: o.allowCommands, CommandsAs: commandsAs,
		Adhoc: o.adhocDoc, NameOrFile: o.nameOrFile, Sets: o.sets, Resume: o.resume, Out: o.out,
		Temporary: o.adhoc && o.out == "", ResumeExisting: o.resumeExisting, Shard: o.shard,
		NoCalibration: o.noCal, RequireCalibration: o.requireCal, NoReport: o.noReport, Render: report.Render, Quality: o.quality,
		Remote: o.remote, Replay: o.replay, Requirements: o.require,
		Progress: progressPrinter(stderr), Log: stderr,
		Ready: func(r experiment.Ready) error { return announceRun(r, o, args, commandsAs, &stopServing, stderr) },
	}
	out, err := run.Execute(ctx)
	defer out.Close()
	if stopServing != nil {
		defer stopServing()
	}
	clearProgress(stderr)
	if code, failed := runFailed(err, out, stderr); failed {
		return code
	}
	rows := out.Rows
	result := exitOK
	if o.asJSON {
		if rows == nil {
			rows = []results.Summary{}
		}
		result = writeJSON(stdout, rows)
	} else {
		printOutcome(stdout, out, rows)
	}
	// A run whose cell measured nothing did not answer its question,
	// whatever else went well: say so, and fail.
	if empty := emptyCells(rows); len(empty) > 0 {
		fmt.Fprintf(stderr, "tlab run: %d of %d cells completed no request (%s): see the error column of their records.csv\n", len(empty), len(rows), strings.Join(empty, ", "))
		return exitFailure
	}
	// Requirements given on the command line are a question whose answer
	// scripts read from the exit status, as tlab advise's and tlab
	// compare's: 1 when no stack meets them on every network. A
	// scenario's own require: leaves the status alone.
	if result == exitOK && len(o.require) > 0 && out.Analysis != nil && !advise.Met(out.Analysis.Answers) {
		fmt.Fprintln(stderr, "tlab run: no stack meets the requirements on every network (exit 1, as tlab advise)")
		return exitFailure
	}
	return result
}

// announceRun says what a run is about to do (cells, time, where, the
// warnings, the commands it runs), checks privileges where it builds a
// testbed here, and starts the live view.
func announceRun(r experiment.Ready, o runOptions, args []string, commandsAs invoker.User, stopServing *func(), stderr io.Writer) error {
	// A run whose every cell crosses a real path builds nothing
	// here: no namespace, no emulator.
	if r.Testbed && !o.privilegesChecked {
		if code, handled := ensurePrivileges(append([]string{"run"}, args...), stderr); handled {
			return exitCode(code)
		}
	}
	where := "into " + r.Dir
	if r.Temporary {
		where = "nothing kept (give --out DIR to keep records, summaries and a report)"
	}
	fmt.Fprintf(stderr, "%s: %s, about %v, %s\n", r.Scenario.Name, units.Count(len(r.Cells), "cell"), r.Plan.Round(time.Second), where)
	for _, w := range plan.Warnings(r.Cells) {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if lines := stacks.Lines(r.Scenario); len(lines) > 0 {
		fmt.Fprintf(stderr, "commands that run on this machine, as %s:\n", commandsAs.Name)
		for _, line := range lines {
			fmt.Fprintf(stderr, "  %s\n", line)
		}
		if commandsAs.Warning != "" {
			fmt.Fprintf(stderr, "warning: %s\n", commandsAs.Warning)
		}
	}
	if o.serve != "" {
		stop, err := serveLive(o.serve, r.Dir, nil, stderr)
		if err != nil {
			return err
		}
		*stopServing = stop
	}
	return nil
}

// runFailed is the exit status of a run that ended in err (false: it
// did not fail), with what the user reads.
func runFailed(err error, out experiment.Outcome, stderr io.Writer) (int, bool) {
	var code exitCode
	switch {
	case errors.As(err, &code):
		return int(code), true
	case errors.Is(err, context.Canceled):
		if out.Temporary {
			fmt.Fprintf(stderr, "tlab run: interrupted after %d of %d cells; nothing is left running. An ad-hoc run without --out cannot be resumed.\n", len(out.Rows), out.Cells)
		} else {
			fmt.Fprintf(stderr, "tlab run: interrupted after %d of %d cells; nothing is left running.\nContinue with: tlab run --resume %s\n", len(out.Rows), out.Cells, out.Dir)
		}
		return exitCanceled, true
	case errors.Is(err, syscall.ENOSPC) && !out.Temporary:
		fmt.Fprintf(stderr, "tlab run: the disk holding %s is full: %v\nEvery complete cell is kept; free space, then continue with: tlab run --resume %s\n", out.Dir, err, out.Dir)
		return exitError, true
	case errors.Is(err, cellrun.ErrInput):
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage, true
	case errors.Is(err, experiment.ErrCalibration):
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitFailure, true
	case errors.Is(err, experiment.ErrReport):
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitError, true
	case err != nil:
		return errorExit(stderr, err), true
	}
	return 0, false
}

// printOutcome prints a run's answer, its rows and where its results are.
func printOutcome(stdout io.Writer, out experiment.Outcome, rows []results.Summary) {
	info := out.Scenario.WorkloadSpec().Info()
	if m, err := results.ReadManifest(out.Dir); err == nil && len(m.Calibrations) > 0 {
		if w := experiment.CalibrationWarning(m.Calibrations[len(m.Calibrations)-1]); w != "" {
			fmt.Fprintf(stdout, "WARNING: %s.\n\n", w)
		}
	}
	if out.Analysis != nil && len(out.Analysis.Answers) > 0 {
		fmt.Fprintln(stdout, "THE ANSWER")
		if len(out.Analysis.Requirements) > 0 {
			printAnswers(stdout, out.Analysis.Answers)
		}
		if out.Analysis.QoO != nil {
			printQoO(stdout, *out.Analysis.QoO, out.Analysis.Answers)
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "%s; seed %d\n\n", info.Describe, out.Scenario.Seed)
	printRows(stdout, rows, info)
	if !out.Temporary {
		fmt.Fprintf(stdout, "\nResults in %s: report.html, summary.csv, summary.json, records.csv, manifest.json\n", out.Dir)
	}
}

// emptyCells lists the cells whose rows count requests and have none.
func emptyCells(rows []results.Summary) []string {
	var out []string
	for _, r := range rows {
		if _, ok := r.Get("requests"); ok && r.Int("requests") == 0 {
			out = append(out, r.Cell)
		}
	}
	return out
}

func runMerge(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("merge", "merge DIR... --out DIR [--json]\n\nJoin the run directories of a scenario's shards (tlab run --shard I/N) into one run directory with\nits report: the same scenario and format, no cell twice; cells no shard holds are listed (exit 1).", stderr)
	out := fs.String("out", "", "the merged run directory (must be new or empty)")
	noReport := fs.Bool("no-report", false, "do not write report.html")
	asJSON := fs.Bool("json", false, "print the merge as JSON: the merged directory, the shards, the cells no shard holds")
	pos, code, ok := parseArgs(fs, args, 1024)
	if !ok {
		return code
	}
	if len(pos) == 0 || *out == "" {
		fmt.Fprintln(stderr, "tlab merge: give the shards' run directories and --out DIR")
		return exitUsage
	}
	missing, err := experiment.Merge(pos, *out)
	if err != nil {
		fmt.Fprintf(stderr, "tlab %v\n", err)
		return exitUsage
	}
	render := experiment.Renderer(report.Render)
	if *noReport {
		render = nil
	}
	if _, err := experiment.Analyze(*out, nil, render); err != nil {
		return errorExit(stderr, err)
	}
	if *asJSON {
		// mergeJSON is a merge as --json prints it.
		type mergeJSON struct {
			Out     string   `json:"out"`
			Shards  []string `json:"shards"`
			Missing []string `json:"missing_cells"`
		}
		if c := writeJSON(stdout, mergeJSON{Out: *out, Shards: pos, Missing: append([]string{}, missing...)}); c != exitOK {
			return c
		}
	} else {
		fmt.Fprintf(stdout, "merged %d run directories into %s\n", len(pos), *out)
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "tlab merge: %s of the scenario in no shard: %s\n", units.Count(len(missing), "cell"), strings.Join(missing, ", "))
		return exitFailure
	}
	return exitOK
}

func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", "validate FILE|PRESET [--set key=value ...] [--json]\n\nCheck a scenario without running it: its cells, their time, its warnings.", stderr)
	var sets listFlag
	fs.Var(&sets, "set", "override a field, e.g. workload.interval=10ms (repeatable)")
	asJSON := fs.Bool("json", false, "print what was checked as JSON (a suite: one object per part)")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "tlab validate: give a scenario file or preset name")
		return exitUsage
	}
	names := pos
	suite, isSuite, err := experiment.SuiteFor(pos[0], sets)
	if err != nil {
		fmt.Fprintf(stderr, "tlab validate: %v\n", err)
		return exitUsage
	}
	if isSuite {
		names = suite.Parts
	}
	var checked []validation
	for _, name := range names {
		v, err := validateScenario(name, sets)
		if err != nil {
			fmt.Fprintf(stderr, "tlab validate: %v\n", err)
			return exitUsage
		}
		checked = append(checked, v)
	}
	if *asJSON {
		if isSuite {
			return writeJSON(stdout, map[string]any{"suite": suite.Name, "parts": checked})
		}
		return writeJSON(stdout, checked[0])
	}
	for _, v := range checked {
		v.print(stdout, stderr)
	}
	if isSuite {
		fmt.Fprintf(stdout, "%s: a valid suite of %s.\n", suite.Name, units.Count(len(suite.Parts), "scenario"))
	}
	return exitOK
}

// validation is what tlab validate checked of one scenario, as --json
// writes it.
type validation struct {
	Name         string  `json:"name"`
	Cells        int     `json:"cells"`
	PlannedS     float64 `json:"planned_s"`
	Profiles     int     `json:"profiles"`
	Protocols    int     `json:"protocols"`
	MatrixPoints int     `json:"matrix_points"`
	Repetitions  int     `json:"repetitions"`
	// MaxRepetitions, MostCells and MostPlannedS are set with
	// repetitions: auto, which repeats only while a verdict is open.
	MaxRepetitions int      `json:"max_repetitions,omitempty"`
	MostCells      int      `json:"most_cells,omitempty"`
	MostPlannedS   float64  `json:"most_planned_s,omitempty"`
	Stacks         []string `json:"stacks,omitempty"`
	// Commands says the scenario gives stacks as commands; FromFile that
	// it is not a preset (tlab run then wants --allow-commands).
	Commands bool     `json:"commands,omitempty"`
	FromFile bool     `json:"from_file,omitempty"`
	RunsAs   string   `json:"commands_run_as,omitempty"`
	Explore  string   `json:"explore,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func validateScenario(name string, sets []string) (validation, error) {
	sc, err := experiment.LoadScenario(name, sets)
	if err != nil {
		return validation{}, err
	}
	est, err := experiment.EstimateOf(sc)
	if err != nil {
		return validation{}, err
	}
	cells := est.Cells
	v := validation{Name: sc.Name, Cells: len(cells), PlannedS: est.Planned.Seconds(), Profiles: len(sc.Profiles), Protocols: len(sc.Protocols),
		MatrixPoints: len(cells) / max(1, len(sc.Profiles)*len(sc.Protocols)*sc.Repetitions), Repetitions: sc.Repetitions,
		Stacks: stacks.Lines(sc), Explore: exploreLine(sc), Warnings: plan.Warnings(cells),
		MaxRepetitions: est.MaxRepetitions, MostCells: est.MostCells, MostPlannedS: est.MostPlanned.Seconds()}
	if stacks.Any(sc) {
		as := invoker.Find()
		v.Commands, v.FromFile, v.RunsAs = true, !experiment.IsPreset(name), as.Name
		if as.Warning != "" {
			v.Warnings = append(v.Warnings, as.Warning)
		}
	}
	return v, nil
}

func (v validation) print(stdout, stderr io.Writer) {
	planned := roundPlan(time.Duration(v.PlannedS * 1e9))
	if v.MostCells > 0 {
		fmt.Fprintf(stdout, "%s: valid. %d to %s (%s x %s x %s x %d to %d repetitions, repeated until decided), about %v to %v.\n",
			v.Name, v.Cells, units.Count(v.MostCells, "cell"), units.Count(v.Profiles, "profile"), units.Count(v.Protocols, "protocol"), units.Count(v.MatrixPoints, "matrix point"), v.Repetitions, v.MaxRepetitions,
			planned, roundPlan(time.Duration(v.MostPlannedS*1e9)))
	} else {
		fmt.Fprintf(stdout, "%s: valid. %s (%s x %s x %s x %s), about %v.\n",
			v.Name, units.Count(v.Cells, "cell"), units.Count(v.Profiles, "profile"), units.Count(v.Protocols, "protocol"), units.Count(v.MatrixPoints, "matrix point"), units.Count(v.Repetitions, "repetition"), planned)
	}
	for _, line := range v.Stacks {
		fmt.Fprintln(stdout, line)
	}
	if v.Commands {
		fmt.Fprintf(stdout, "These commands run on this machine under /bin/sh, in the testbed's hosts, as the user who starts tlab run: through sudo, doas or pkexec the invoking user, root only when tlab runs as root without one (started as you are now: %s).\n", v.RunsAs)
		if v.FromFile {
			fmt.Fprintln(stdout, "They come from a file: tlab run runs them only with --allow-commands.")
		}
	}
	if v.MaxRepetitions > 0 {
		fmt.Fprintf(stdout, "repetitions: auto: each point repeated until its verdicts are decided, up to %d repetitions.\n", v.MaxRepetitions)
	}
	if v.Explore != "" {
		fmt.Fprintln(stdout, v.Explore)
	}
	for _, w := range v.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
}

func runReport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("report", "report DIR\n\nRegenerate report.html and plots/ of a results directory.", stderr)
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "tlab report: give a results directory")
		return exitUsage
	}
	done, err := experiment.Analyze(pos[0], nil, report.Render)
	if err != nil {
		if errors.Is(err, experiment.ErrReport) {
			return errorExit(stderr, err)
		}
		fmt.Fprintf(stderr, "tlab report: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(stdout, done.Report)
	return exitOK
}

func runCompare(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("compare", "compare DIR DIR... [--out DIR] [--require 'METRIC<=BOUND' ...] [--json]\n\nPut runs side by side (two networks, two days): one report whose plots group every run's cells,\nwith each run's verdicts (which stack is faster, by how much) in its verdict table and\ncomparisons.csv. With requirements (given, or the runs' own when they all state the same) it\nanswers them on every run and network, and exits 1 when no stack meets them on all of them.", stderr)
	out := fs.String("out", "", "directory for the comparison (default compare-TIMESTAMP)")
	var reqs listFlag
	fs.Var(&reqs, "require", "a requirement on a metric (tlab metrics), such as delay_p99_ms<=20 (repeatable; the first is the priority)")
	qooSpec := fs.String("qoo", "", "a Quality of Outcome requirement profile (tlab qoo, or a LibreQoS FILE[#ID]); default: the runs' own when they all keep the same")
	asJSON := fs.Bool("json", false, "print the comparison as JSON: its directory, report and files, the requirements and the answers")
	pos, code, ok := parseArgs(fs, args, 64)
	if !ok {
		return code
	}
	if len(pos) < 2 {
		fmt.Fprintln(stderr, "tlab compare: give at least two results directories")
		return exitUsage
	}
	parsed, err := parseRequirements(reqs)
	if err != nil {
		fmt.Fprintf(stderr, "tlab compare: %v\n", err)
		return exitUsage
	}
	if *out == "" {
		*out = "compare-" + time.Now().Format("20060102-150405")
	}
	var profile *qoo.Profile
	if *qooSpec != "" {
		p, err := qoo.Resolve(*qooSpec)
		if err != nil {
			fmt.Fprintf(stderr, "tlab compare: --qoo: %v\n", err)
			return exitUsage
		}
		profile = &p
	}
	a, path, err := experiment.Compare(pos, *out, parsed, profile, report.RenderComparison)
	if err != nil {
		fmt.Fprintf(stderr, "tlab compare: %v\n", err)
		return exitUsage
	}
	met := len(a.Requirements) == 0 || advise.Met(a.Answers)
	if *asJSON {
		// compareJSON is a comparison as --json prints it; answers as
		// tlab advise --json prints them.
		type compareJSON struct {
			Out          string          `json:"out"`
			Report       string          `json:"report,omitempty"`
			Runs         []string        `json:"runs"`
			Files        []string        `json:"files"`
			Requirements []string        `json:"requirements"`
			QoO          string          `json:"qoo,omitempty"`
			Met          bool            `json:"met"`
			Answers      []advise.Answer `json:"answers"`
		}
		v := compareJSON{Out: *out, Report: path, Runs: pos, Files: append([]string{}, a.Files...),
			Requirements: append([]string{}, a.RequirementTexts()...), Met: met, Answers: append([]advise.Answer{}, a.Answers...)}
		if a.QoO != nil {
			v.QoO = a.QoO.ID
		}
		if c := writeJSON(stdout, v); c != exitOK {
			return c
		}
	} else {
		if len(a.Requirements) > 0 {
			fmt.Fprintf(stdout, "Requirements: %s\n", strings.Join(a.RequirementTexts(), "; "))
			printAnswers(stdout, a.Answers)
		}
		if a.QoO != nil {
			printQoO(stdout, *a.QoO, a.Answers)
		}
		fmt.Fprintln(stdout, path)
	}
	if !met {
		return exitFailure
	}
	return exitOK
}

func runPresets(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("presets", "presets [--json]\n\nList the built-in scenarios (tlab run NAME runs one): cells, planned time and what each measures.", stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	// presetInfo is one preset as --json writes it.
	type presetInfo struct {
		Name     string   `json:"name"`
		Cells    int      `json:"cells"`
		PlannedS float64  `json:"planned_s"`
		Suite    []string `json:"suite,omitempty"`
		// MostCells and MostPlannedS are the most a preset with
		// repetitions: auto may run, when every verdict stays open.
		MostCells    int     `json:"most_cells,omitempty"`
		MostPlannedS float64 `json:"most_planned_s,omitempty"`
		Description  string  `json:"description"`
		Invalid      string  `json:"invalid,omitempty"`
	}
	var out []presetInfo
	for _, n := range scenarios.Names() {
		info := presetInfo{Name: n}
		if suite, isSuite, err := scenarios.ReadSuite(n); isSuite {
			if err != nil {
				info.Invalid = err.Error()
				out = append(out, info)
				continue
			}
			planned := time.Duration(0)
			for _, part := range suite.Parts {
				if sc, err := experiment.LoadPreset(part, nil); err == nil {
					est, _ := experiment.EstimateOf(sc)
					info.Cells += len(est.Cells)
					planned += est.Planned
				}
			}
			info.PlannedS, info.Suite, info.Description = planned.Seconds(), suite.Parts, firstSentence(suite.Description)
			out = append(out, info)
			continue
		}
		sc, err := experiment.LoadPreset(n, nil)
		if err != nil {
			info.Invalid = err.Error()
			out = append(out, info)
			continue
		}
		est, _ := experiment.EstimateOf(sc)
		info.Cells, info.PlannedS, info.Description = len(est.Cells), est.Planned.Seconds(), firstSentence(sc.Description)
		info.MostCells, info.MostPlannedS = est.MostCells, est.MostPlanned.Seconds()
		out = append(out, info)
	}
	if *asJSON {
		return writeJSON(stdout, out)
	}
	for _, p := range out {
		planned := roundPlan(time.Duration(p.PlannedS * 1e9))
		switch {
		case p.Invalid != "":
			fmt.Fprintf(stdout, "%-20s INVALID: %s\n", p.Name, p.Invalid)
		case len(p.Suite) > 0:
			fmt.Fprintf(stdout, "%-20s %4d cells, ~%-10v suite of %s. %s\n", p.Name, p.Cells, planned, strings.Join(p.Suite, ", "), p.Description)
		case p.MostCells > 0:
			span := fmt.Sprintf("%v-%v", planned, roundPlan(time.Duration(p.MostPlannedS*1e9)))
			fmt.Fprintf(stdout, "%-20s %4d-%d cells, ~%-10v %s\n", p.Name, p.Cells, p.MostCells, span, p.Description)
		default:
			fmt.Fprintf(stdout, "%-20s %4d cells, ~%-10v %s\n", p.Name, p.Cells, planned, p.Description)
		}
	}
	return exitOK
}

// roundPlan rounds a planned time as tlab presets and tlab validate both
// print it: to the minute, or to the second under a minute (an estimate
// to the second over minutes claims a precision it does not have).
func roundPlan(d time.Duration) time.Duration {
	if d = d.Round(time.Second); d >= time.Minute {
		d = d.Round(time.Minute)
	}
	return d
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}

// setArgs turns --set values back into arguments.
func setArgs(sets []string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, "--set", s)
	}
	return out
}
