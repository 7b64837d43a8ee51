package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tlab/internal/experiment"
	"tlab/internal/report"
	"tlab/internal/scenario"
	"tlab/scenarios"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// loadScenario reads a scenario file, or a preset by name.
func loadScenario(nameOrFile string, sets []string) (*scenario.Scenario, error) {
	if _, err := os.Stat(nameOrFile); err == nil || strings.ContainsAny(nameOrFile, "/.") {
		return scenario.Load(nameOrFile, sets...)
	}
	data, ok := scenarios.Read(nameOrFile)
	if !ok {
		return nil, fmt.Errorf("no scenario file or preset %q; presets are %s", nameOrFile, strings.Join(scenarios.Names(), ", "))
	}
	return scenario.Parse("preset:"+nameOrFile, data, sets...)
}

// plannedDuration estimates a scenario's running time.
func plannedDuration(sc *scenario.Scenario, cells int) time.Duration {
	per := sc.Warmup.D() + sc.Duration.D()
	if sc.Count > 0 {
		per = sc.Warmup.D() + time.Duration(sc.Count)*sc.Workload.Interval.D()
	}
	// ~0.4 s per cell builds and removes its testbed.
	return time.Duration(cells) * (per + 400*time.Millisecond)
}

// runScenario runs (or resumes) a scenario into a run directory and
// writes its report.
func runScenario(ctx context.Context, nameOrFile, resume string, sets []string, out string, noCal, noReport, asJSON bool, args []string, stdout, stderr io.Writer) int {
	var sc *scenario.Scenario
	var err error
	if resume != "" {
		if nameOrFile != "" || len(sets) > 0 {
			fmt.Fprintln(stderr, "tlab run: --resume DIR continues the run's own scenario; give no file and no --set")
			return exitUsage
		}
		sc, err = experiment.OpenResume(resume)
		out = resume
	} else {
		sc, err = loadScenario(nameOrFile, sets)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	}
	cells, err := sc.Cells()
	if err != nil {
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	}
	if out == "" {
		out = filepath.Join("results", sc.Name+"-"+time.Now().Format("20060102-150405"))
	}
	if code, handled := ensurePrivileges(append([]string{"run"}, args...), stderr); handled {
		return code
	}
	fmt.Fprintf(stderr, "%s: %d cells, about %v, into %s\n", sc.Name, len(cells), plannedDuration(sc, len(cells)).Round(time.Second), out)
	sw := experiment.Sweep{Scenario: sc, Dir: out, Resume: resume != "", SkipCalibration: noCal, Progress: progressPrinter(stderr), Log: stderr}
	rows, err := sw.Run(ctx)
	clearProgress(stderr)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "tlab run: interrupted after %d of %d cells; nothing is left running.\nContinue with: tlab run --resume %s\n", len(rows), len(cells), out)
			return exitCanceled
		}
		if errors.Is(err, experiment.ErrRunExists) {
			fmt.Fprintf(stderr, "tlab run: %v\n", err)
			return exitUsage
		}
		return errorExit(stderr, err)
	}
	if !noReport {
		r, err := report.Load(out)
		if err == nil {
			_, err = report.Build(r)
		}
		if err != nil {
			fmt.Fprintf(stderr, "tlab run: report: %v\n", err)
			return exitError
		}
	}
	if asJSON {
		maps := make([]map[string]any, len(rows))
		for i, r := range rows {
			maps[i] = r.Fields()
		}
		return writeJSON(stdout, maps)
	}
	printRows(stdout, rows)
	fmt.Fprintf(stdout, "\nResults in %s: report.html, summary.csv, summary.json, records.csv, manifest.json\n", out)
	return exitOK
}

func runValidate(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", "validate FILE|PRESET [--set key=value ...]\n\nCheck a scenario without running it.", stderr)
	var sets listFlag
	fs.Var(&sets, "set", "override a field, e.g. workload.interval=10ms (repeatable)")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "tlab validate: give a scenario file or preset name")
		return exitUsage
	}
	sc, err := loadScenario(pos[0], sets)
	if err == nil {
		var cells []scenario.Cell
		if cells, err = sc.Cells(); err == nil {
			fmt.Fprintf(stdout, "%s: valid. %d cells (%d profiles x %d protocols x %d matrix points x %d repetitions), about %v.\n",
				sc.Name, len(cells), len(sc.Profiles), len(sc.Protocols), len(cells)/max(1, len(sc.Profiles)*len(sc.Protocols)*sc.Repetitions), sc.Repetitions,
				plannedDuration(sc, len(cells)).Round(time.Second))
			return exitOK
		}
	}
	fmt.Fprintf(stderr, "tlab validate: %v\n", err)
	return exitUsage
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
	r, err := report.Load(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "tlab report: %v\n", err)
		return exitUsage
	}
	path, err := report.Build(r)
	if err != nil {
		return errorExit(stderr, err)
	}
	fmt.Fprintln(stdout, path)
	return exitOK
}

func runCompare(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("compare", "compare DIR DIR... [--out DIR]\n\nPut runs side by side: one report whose plots group every run's cells.", stderr)
	out := fs.String("out", "", "directory for the comparison (default compare-TIMESTAMP)")
	pos, code, ok := parseArgs(fs, args, 64)
	if !ok {
		return code
	}
	if len(pos) < 2 {
		fmt.Fprintln(stderr, "tlab compare: give at least two results directories")
		return exitUsage
	}
	if *out == "" {
		*out = "compare-" + time.Now().Format("20060102-150405")
	}
	path, err := report.Compare(pos, *out)
	if err != nil {
		fmt.Fprintf(stderr, "tlab compare: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(stdout, path)
	return exitOK
}

func runPresets(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("presets", "presets\n\nList the built-in scenarios (tlab run NAME runs one).", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	for _, n := range scenarios.Names() {
		data, _ := scenarios.Read(n)
		sc, err := scenario.Parse(n, data)
		if err != nil {
			fmt.Fprintf(stdout, "%-16s INVALID: %v\n", n, err)
			continue
		}
		cells, _ := sc.Cells()
		fmt.Fprintf(stdout, "%-16s %4d cells, ~%-10v %s\n", n, len(cells), plannedDuration(sc, len(cells)).Round(time.Minute), firstSentence(sc.Description))
	}
	return exitOK
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}
