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

	"tlab/internal/advise"
	"tlab/internal/experiment"
	"tlab/internal/explore"
	"tlab/internal/report"
	"tlab/internal/scenario"
	"tlab/internal/units"
)

// runExplore searches a scenario's explore: section (experiment.Exploration)
// and prints its rounds and the map's answer.
func runExplore(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("explore", "explore FILE|PRESET [--budget CELLS|DURATION] [--set key=value ...] [--out DIR] [--no-why] [--json]\n       tlab explore --resume DIR\n\nWhere does the answer change? Search the scenario's explore: section (parameters with ranges,\nsuch as link.loss: 0%..5%): a coarse grid first, then points where neighbours' verdicts disagree,\neach repeated only until its comparisons are decided by an always-valid sequential test. Every cell\nis an ordinary cell of the run directory (tlab report, tlab stats and --resume work on it); the map\nis explore-points.csv, explore-boundaries.csv and the report's explore_map. Each boundary is then\nexplained by ablation: its neighbours measured again without loss, jitter or the queue, each removal\nits own run under ablation/; explore-why.csv says which removal moves it. See docs/guide.md.", stderr)
	var sets listFlag
	fs.Var(&sets, "set", "override a scenario field, e.g. workload.interval=10ms or explore.max_repetitions=6 (repeatable)")
	budget := fs.String("budget", "", "what the search may spend: a number of cells (200) or a duration (30m); replaces the section's")
	out := fs.String("out", "", "results directory (default results/NAME-TIME)")
	resume := fs.String("resume", "", "continue the interrupted exploration in DIR")
	noCal := fs.Bool("no-calibration", false, "skip the emulator calibration recorded in the manifest")
	noReport := fs.Bool("no-report", false, "do not write report.html")
	quality := fs.String("quality", "", "re-run cells the host disturbed: normal (default: up to 3 attempts), strict (5, tighter), off")
	why := fs.Bool("why", true, "explain each boundary by ablation: re-measure its neighbours without loss, jitter or the queue (ablation/ in the run), within the budget's rest")
	noWhy := fs.Bool("no-why", false, "do not explain the boundaries (the same as --why=false)")
	asJSON := fs.Bool("json", false, "print the map (explore.json's facts and every point's verdicts) as JSON")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
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
	if *budget != "" {
		b, err := explore.ParseBudget(*budget)
		if err != nil {
			fmt.Fprintf(stderr, "tlab explore: --budget %v\n", err)
			return exitUsage
		}
		ex.Budget = &b
	}
	ex.Ready = func(r experiment.ExploreReady) error {
		if code, handled := ensurePrivileges(append([]string{"explore"}, args...), stderr); handled {
			return exitCode(code)
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
	case errors.Is(err, experiment.ErrInput):
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
