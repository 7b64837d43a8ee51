package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/emu"
	"tlab/internal/metrics"
	"tlab/internal/plan"
	"tlab/internal/qoo"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// Sweep runs a scenario's cells into a run directory (see package results
// for its layout).
type Sweep struct {
	Scenario *scenario.Scenario
	// Placed, when set, says the run placed Scenario's cells at a site
	// it was given (tlab run --remote): the run directory keeps the
	// scenario as written and the manifest the placement.
	Placed *cellrun.Placed
	Dir    string
	// Resume continues a run in Dir: whole cells are kept, a cell that
	// was in flight is run again.
	Resume bool
	// SkipCalibration leaves the calibration out of the manifest.
	SkipCalibration bool
	Progress        func(cellrun.Progress)
	// OnRow, when set, hears each cell's row as soon as the cell ends.
	OnRow func(results.Summary)
	// Log, when set, hears about steps (calibration, resumed cells).
	Log io.Writer
	// Quality decides which cells are disturbed and run again.
	Quality cellrun.Quality
	// RequireCalibration refuses to run cells when the opening
	// calibration does not pass.
	RequireCalibration bool
	// Shard, when set, runs only this shard's share of the cells.
	Shard Shard
	// Cells, when set, are the compiled cells to run in place of the
	// scenario's (the run's, already compiled; an exploration's rounds so
	// far: plan.CompileAt's points).
	Cells []plan.Cell
	// nextRound marks a later round of this same run (an exploration's,
	// repetitions: auto), with Resume: not a resume, and the run grows.
	nextRound bool
	// Sites are the run's started sites by kind, where its cells' networks
	// run at one (sites: in the scenario); the testbed needs none. A cell
	// whose site is missing is refused before anything runs.
	Sites map[string]cellrun.Site
	// Requirements go into the manifest ("METRIC OP BOUND" each); a
	// resume without any keeps the run's.
	Requirements []advise.Requirement
	// QoO, when set, goes into the manifest as the profile the answer
	// scores each stack against.
	QoO *qoo.Profile
	// CommandsAs, when set, runs the commands of the scenario's own
	// stacks as that user (the invoking user under sudo).
	CommandsAs *syscall.Credential
	// CommandsEnv is that user's HOME, USER and LOGNAME.
	CommandsEnv []string
	// calibrate takes the opening calibration into the manifest
	// (calibrateInto when nil); tests give a fake.
	calibrate func(ctx context.Context, m *results.Manifest, emulator emu.EngineOptions) error
	// attempt runs one attempt at a cell (RunCell when nil); tests give a
	// fake, to test the sweep's bookkeeping without a network.
	attempt func(ctx context.Context, spec cellrun.CellSpec, sink func(results.Record) error, progress func(cellrun.Progress)) (cellrun.CellResult, error)
}

// Shard is one of N parts of a scenario's cells: cell k (in the
// scenario's order, from 0) belongs to shard k mod N + 1. The partition
// depends only on the scenario and N, and every cell keeps its id and seed,
// so shards run anywhere merge into the run one machine would have made.
type Shard struct{ I, N int }

// ParseShard reads "I/N".
func ParseShard(s string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.I, &sh.N); err != nil || sh.N < 1 || sh.I < 1 || sh.I > sh.N || fmt.Sprintf("%d/%d", sh.I, sh.N) != s {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 1 <= I <= N, such as 2/8", s)
	}
	return sh, nil
}

// ShardFromEnv resolves "auto/N", the shard of a task of a cluster
// engine: a Kubernetes Indexed Job's JOB_COMPLETION_INDEX (from 0, so
// shard index+1) or a Slurm job array's SLURM_ARRAY_TASK_ID (the array
// 1-N). Any other value is returned as it is.
func ShardFromEnv(s string, getenv func(string) string) (string, error) {
	n, ok := strings.CutPrefix(s, "auto/")
	if !ok {
		return s, nil
	}
	if v := getenv("JOB_COMPLETION_INDEX"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 {
			return "", fmt.Errorf("shard auto: JOB_COMPLETION_INDEX %q is not an index", v)
		}
		return strconv.Itoa(k+1) + "/" + n, nil
	}
	if v := getenv("SLURM_ARRAY_TASK_ID"); v != "" {
		return v + "/" + n, nil
	}
	return "", errors.New("shard auto/N: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (a Slurm job array 1-N) is set; give --shard I/N")
}

func (sh Shard) String() string {
	if sh.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", sh.I, sh.N)
}

// Of returns the shard's cells.
func (sh Shard) Of(cells []plan.Cell) []plan.Cell {
	if sh.N <= 1 {
		return cells
	}
	var out []plan.Cell
	for k, c := range cells {
		if k%sh.N == sh.I-1 {
			out = append(out, c)
		}
	}
	return out
}

// ErrCalibration is returned when RequireCalibration is set and the
// opening calibration did not pass.
var ErrCalibration = errors.New("the opening calibration did not pass")

// CalibrationWarning says what a calibration that did not pass means for
// the results, or "" when it passed.
func CalibrationWarning(c *results.Calibration) string {
	if c == nil || c.Verdict == "pass" || c.Verdict == "" && c.Pass() {
		return ""
	}
	var failed []string
	for _, ch := range c.Checks {
		if !ch.Pass {
			failed = append(failed, fmt.Sprintf("%s %s %s (target %s)", ch.Name, ch.ValueText(), ch.Unit, ch.Target))
		}
	}
	why := "the emulator is less accurate than tlab's targets on this machine"
	switch c.Verdict {
	case "inconclusive":
		return fmt.Sprintf("the opening calibration could not decide %d of %d checks (%s): their intervals straddle the targets, so the emulator is not shown to meet them", len(failed), len(c.Checks), strings.Join(failed, "; "))
	case "host":
		why = "the host's own noise explains every failure: timings measured now carry it"
	}
	return fmt.Sprintf("the opening calibration failed %d of %d checks (%s): %s", len(failed), len(c.Checks), strings.Join(failed, "; "), why)
}

// ErrRunExists is returned when the run directory already holds a run and
// Resume is not set.
var ErrRunExists = errors.New("the directory already holds a run")

// OpenResume loads the scenario a run directory was started with, its
// cells placed where the run placed them (the manifest's placement).
func OpenResume(dir string) (*scenario.Scenario, error) {
	m, err := results.ReadManifest(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	if m != nil && m.Placement != nil {
		s, err := scenario.Load(filepath.Join(dir, results.ScenarioFile))
		if err == nil {
			s, err = cellrun.ApplyPlacement(s, *m.Placement)
		}
		if err != nil {
			return nil, fmt.Errorf("resume %s: %w", dir, err)
		}
		return s, nil
	}
	// A run made before placements kept its placement in its
	// scenario.yaml.
	var sets []string
	if m != nil && m.Remote != nil {
		// A remote run made before sites: existed named its real path
		// by the profile alone.
		if b, err := os.ReadFile(filepath.Join(dir, results.ScenarioFile)); err == nil && !strings.Contains(string(b), "\nsites:") {
			sets = append(sets, "sites={"+analysis.RealPath+": "+cellrun.AgentSite+"}")
		}
	}
	s, err := scenario.Load(filepath.Join(dir, results.ScenarioFile), sets...)
	if err != nil {
		return nil, fmt.Errorf("resume %s: %w", dir, err)
	}
	return s, nil
}

func (sw Sweep) logf(format string, args ...any) {
	if sw.Log != nil {
		fmt.Fprintf(sw.Log, format+"\n", args...)
	}
}

// Run executes every cell not yet done and returns every row of the run.
// Its steps: the cells this run (or shard) holds, the run directory, the
// manifest (new, or the resumed run's), the opening calibration, the
// cells one after another, and the run's summaries and records once at
// the end.
func (sw Sweep) Run(ctx context.Context) ([]results.Summary, error) {
	all, cells, err := sw.cellsToRun()
	if err != nil {
		return nil, err
	}
	sites, err := sw.sites(cells)
	if err != nil {
		return nil, err
	}
	if err := sw.prepareDir(); err != nil {
		return nil, err
	}
	var params []string
	if len(cells) > 0 {
		for _, p := range cells[0].Params {
			params = append(params, p.Key)
		}
	}
	m, err := sw.openManifest(all, cells, params)
	if err != nil {
		return nil, err
	}
	if err := sw.calibrateOpening(ctx, m, cells); err != nil {
		return nil, err
	}
	if err := m.Save(sw.Dir); err != nil {
		return nil, err
	}
	rows, err := sw.runCells(ctx, m, cells, sites, params)
	if err != nil {
		return rows, err
	}
	return rows, sw.finishRun(m, rows)
}

// cellsToRun are the scenario's compiled cells (or the given ones) and
// this run's share of them: a resumed run keeps its shard, and cells
// that differ only in their network are interleaved where some run at a
// site.
func (sw *Sweep) cellsToRun() (all, cells []plan.Cell, err error) {
	all = sw.Cells
	if all == nil {
		if all, err = plan.Compile(sw.Scenario); err != nil {
			return nil, nil, err
		}
	}
	if sw.Resume && sw.Shard.N == 0 {
		if m, err := results.ReadManifest(sw.Dir); err == nil && m.Shard != "" {
			if sw.Shard, err = ParseShard(m.Shard); err != nil {
				return nil, nil, err
			}
		}
	}
	cells = sw.Shard.Of(all)
	if slices.ContainsFunc(cells, func(c plan.Cell) bool { return c.Site != "" }) {
		cells = interleaveNetworks(cells)
	}
	return all, cells, nil
}

// prepareDir makes the run directory ready, refusing one that holds a
// run this sweep does not resume.
func (sw Sweep) prepareDir() error {
	// The directory is checked before anything in it is looked at: a
	// directory another user controls says nothing about a run.
	if err := results.PrepareOut(sw.Dir); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(sw.Dir, results.ScenarioFile)); err == nil && !sw.Resume {
		return fmt.Errorf("%s: %w; continue it with --resume %s or choose another --out", sw.Dir, ErrRunExists, sw.Dir)
	}
	return results.Mkdir(filepath.Join(sw.Dir, results.CellsDir))
}

// openManifest is the run's manifest: a new one (and the scenario's file
// beside it), or the resumed run's, its quality rule kept; with the
// requirements, the QoO profile and what each site knows of the run.
func (sw *Sweep) openManifest(all, cells []plan.Cell, params []string) (*results.Manifest, error) {
	sc := sw.Scenario
	m, err := results.ReadManifest(sw.Dir)
	if err != nil || !sw.Resume {
		m = cellrun.NewManifest()
		if w := cellrun.UnstampedWarning(m); w != "" {
			sw.logf("warning: %s", w)
			m.Warnings = append(m.Warnings, w)
		}
		m.Scenario, m.Description, m.ScenarioFile, m.Seed, m.Cells = sc.Name, sc.Description, sc.File(), sc.Seed, len(cells)
		m.Shard, m.TotalCells = sw.Shard.String(), len(all)
		info := sc.WorkloadSpec().Info()
		m.Workload, m.Params, m.Plots, m.Table, m.Baseline = info.Type, params, sc.PlotsOrDefault(), info.Table, sc.Baseline
		written := sc
		if sw.Placed != nil {
			written, m.Placement = sw.Placed.Written, &sw.Placed.Placement
		}
		y, err := written.YAML()
		if err != nil {
			return nil, err
		}
		if err := results.WriteFileAtomic(filepath.Join(sw.Dir, results.ScenarioFile), y); err != nil {
			return nil, err
		}
	} else {
		if sw.nextRound {
			m.Cells, m.TotalCells = len(cells), len(all)
		} else {
			m.Resumed = append(m.Resumed, time.Now())
		}
		m.Finished = nil
		m.Params = params
		if sw.Quality.Mode == "" {
			sw.Quality.Mode = m.Quality // a resume keeps the run's rule
		}
	}
	if _, err := sw.Quality.Thresholds(); err != nil {
		return nil, err
	}
	if sw.Quality.Mode == "" {
		sw.Quality.Mode = "normal"
	}
	m.Quality = sw.Quality.Mode
	if len(sw.Requirements) > 0 {
		m.Requirements = nil
		for _, r := range sw.Requirements {
			m.Requirements = append(m.Requirements, r.String())
		}
	}
	if sw.QoO != nil {
		m.QoO = sw.QoO.Wire()
	}
	if !sw.nextRound {
		// What each site knows of the run (the agent, the path at the
		// start), once a start or resume: a later round is neither.
		for _, kind := range slices.Sorted(maps.Keys(sw.Sites)) {
			sw.Sites[kind].Note(m)
		}
	}
	return m, nil
}

// calibrateOpening takes the opening calibration into the manifest when
// some cell is still to run (and it is not skipped); one that does not
// pass is a warning, or the run's end with RequireCalibration.
func (sw Sweep) calibrateOpening(ctx context.Context, m *results.Manifest, cells []plan.Cell) error {
	pending := 0
	for _, c := range cells {
		if !results.CellDone(results.CellDir(sw.Dir, c.ID)) {
			pending++
		}
	}
	if pending == 0 {
		sw.logf("every cell is complete: nothing to run, no calibration taken")
	}
	if sw.SkipCalibration || pending == 0 {
		return nil
	}
	sw.logf("calibrating the emulator (tlab calibrate --quick)...")
	calibrate := sw.calibrate
	if calibrate == nil {
		calibrate = cellrun.CalibrateInto
	}
	err := calibrate(ctx, m, sw.Scenario.Emulator)
	var w string
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("calibration: %w", ctx.Err())
	case err != nil:
		// An instrument check that could not finish (a probe that
		// timed out on a stalled host) is no reason to lose the
		// run: every cell carries its own instrument figures.
		w = fmt.Sprintf("the opening calibration could not finish (%v); the cells carry their own instrument figures", err)
	default:
		w = CalibrationWarning(m.Calibrations[len(m.Calibrations)-1])
	}
	if w == "" {
		return nil
	}
	sw.logf("warning: %s", w)
	m.Warnings = append(m.Warnings, w)
	if sw.RequireCalibration {
		if err := m.Save(sw.Dir); err != nil {
			return err
		}
		return fmt.Errorf("%w (--require-calibration): %s", ErrCalibration, w)
	}
	return nil
}

// runCells runs the cells in order: a complete cell is read back, any
// other started afresh in its directory; a failed or disturbed cell is a
// warning in the manifest.
func (sw Sweep) runCells(ctx context.Context, m *results.Manifest, cells []plan.Cell, sites map[string]cellrun.Site, params []string) ([]results.Summary, error) {
	var rows []results.Summary
	done := 0
	for i, cell := range cells {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		// Progress counts this run's cells (a shard's share).
		cell.Index = i
		dir := results.CellDir(sw.Dir, cell.ID)
		if results.CellDone(dir) {
			if prev, err := results.ReadCellSummary(dir, params); err == nil {
				// A cell an older tlab completed gets its in_summary
				// column, so that the run's records join.
				if err := results.BackfillInSummary(dir, max(prev.IntOr("attempt", 1), 1), outlierRule(cell.RemoveOutliers)); err != nil {
					return rows, fmt.Errorf("cell %s: %w", cell.ID, err)
				}
				rows = append(rows, prev)
				done++
				continue
			}
		}
		// Not done (or never started): start the cell afresh.
		if err := os.RemoveAll(dir); err != nil {
			return rows, err
		}
		if err := results.Mkdir(dir); err != nil {
			return rows, err
		}
		row, overlaps, err := sw.runCell(ctx, cell, len(cells), dir, sites[cell.Site])
		if err != nil {
			return rows, fmt.Errorf("cell %s (%s over %s): %w", cell.ID, cell.Protocol, cell.Profile, err)
		}
		// The cell's records as Parquet now, between cells, so that the
		// run's end copies them rather than converting every record.
		if err := results.WriteCellParquet(dir, params); err != nil {
			return rows, fmt.Errorf("cell %s: records as Parquet: %w", cell.ID, err)
		}
		if err := sw.warnAboutCell(m, cell, row, overlaps); err != nil {
			return rows, err
		}
		// The cell's own summary is on disk (cells/ID/summary.json), and
		// results.Rows reads the run's so far from those: the run's
		// summaries are written once, at the end, not rewritten after
		// every cell (quadratic in the cells of a long study).
		rows = append(rows, row)
		if sw.OnRow != nil {
			sw.OnRow(row)
		}
	}
	if done > 0 {
		sw.logf("resumed: %d of %d cells were already complete", done, len(cells))
	}
	return rows, nil
}

// warnAboutCell records in the manifest that a cell failed, or ran while
// other tlab runs were live.
func (sw Sweep) warnAboutCell(m *results.Manifest, cell plan.Cell, row results.Summary, overlaps []testbed.LiveRun) error {
	if why := row.Label("cell_error"); why != "" {
		w := fmt.Sprintf("cell %s (%s over %s) failed: %s", cell.ID, cell.Protocol, cell.Profile, why)
		sw.logf("warning: %s", w)
		m.Warnings = append(m.Warnings, w)
		if err := m.Save(sw.Dir); err != nil {
			return err
		}
	}
	if len(overlaps) > 0 {
		var names []string
		for _, o := range overlaps {
			if n := o.String(); !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		w := fmt.Sprintf("cell %s ran while other tlab runs were live (%s): they share the CPUs, its timings are disturbed", cell.ID, strings.Join(names, ", "))
		sw.logf("warning: %s", w)
		m.Warnings = append(m.Warnings, w)
		if err := m.Save(sw.Dir); err != nil {
			return err
		}
	}
	return nil
}

// finishRun writes the run's summaries and records (CSV and Parquet) and
// marks the manifest finished.
func (sw Sweep) finishRun(m *results.Manifest, rows []results.Summary) error {
	if err := results.WriteTypedSummaries(sw.Dir, rows, metrics.ColumnType); err != nil {
		return err
	}
	if err := results.JoinRecords(sw.Dir); err != nil {
		return err
	}
	if err := results.WriteRecordsParquet(sw.Dir, m.Params); err != nil {
		return fmt.Errorf("records as Parquet: %w", err)
	}
	now := time.Now()
	m.Finished = &now
	return m.Save(sw.Dir)
}

// sites are the sites the cells run at, by kind ("" the testbed): the
// run's started sites (the agent's real path where the run has one). A cell whose site the run does
// not have is refused before anything runs.
func (sw Sweep) sites(cells []plan.Cell) (map[string]cellrun.Site, error) {
	sites := map[string]cellrun.Site{"": cellrun.TestbedSite{}}
	maps.Copy(sites, sw.Sites)
	for _, c := range cells {
		if _, ok := sites[c.Site]; !ok {
			return nil, cellrun.InputErr(fmt.Errorf("network %s runs at the %s site, which this run does not have: %s", c.Profile, c.Site, siteHint(c.Site)))
		}
	}
	return sites, nil
}

// siteHint says how a user gives a site of kind.
func siteHint(kind string) string {
	for _, k := range scenario.SiteKinds() {
		if k.Kind == kind {
			return "give " + k.Flag
		}
	}
	return "no such site"
}

func (sw Sweep) runCell(ctx context.Context, cell plan.Cell, total int, dir string, site cellrun.Site) (results.Summary, []testbed.LiveRun, error) {
	spec := cellrun.SpecOf(cell, total)
	if c, ok := spec.Workload.(workload.Command); ok {
		c.Credential, c.UserEnv = sw.CommandsAs, sw.CommandsEnv
		spec.Workload = c
	}
	spec.Label = "tlab run " + cell.Scenario + " into " + sw.Dir
	spec.Dir = dir
	spec.ServerLog = filepath.Join(dir, "server.log")
	if spec.Cross.Active() {
		spec.CrossLog = filepath.Join(dir, "cross.csv")
	}
	if len(spec.Beside) > 0 {
		spec.BesideDir = dir
	}
	spec.Site = site
	// Each attempt captures into its own directory; the reported
	// attempt's becomes captures/, so the pcap, key log and qlog always
	// belong to the summarised run.
	captureDir := func(attempt int) string { return "" }
	if cell.Capture {
		captureDir = func(attempt int) string {
			return filepath.Join(dir, fmt.Sprintf("captures.attempt-%d", attempt))
		}
	}
	rec, err := results.CreateRecords(filepath.Join(dir, results.RecordsFile), spec.Cell, spec.Workload.Info().Columns)
	if err != nil {
		return results.Summary{}, nil, err
	}
	defer rec.Close()
	best, bestOverlaps, bestAttempt, bestRecords, err := sw.attempts(ctx, spec, rec, captureDir)
	if err != nil {
		return results.Summary{}, nil, err
	}
	if err := rec.Close(); err != nil {
		return results.Summary{}, nil, err
	}
	if err := results.MarkSummaryRows(dir, bestAttempt, summaryOutliers(spec, bestRecords)); err != nil {
		return results.Summary{}, nil, fmt.Errorf("marking the records the summary used: %w", err)
	}
	if cell.Capture {
		if err := keepCaptures(dir, captureDir, bestAttempt); err != nil {
			return results.Summary{}, nil, err
		}
	}
	if fi, err := os.Stat(spec.ServerLog); err == nil && fi.Size() == 0 {
		os.Remove(spec.ServerLog) // nothing logged: no file
	}
	if err := results.WriteTypedSummaries(dir, []results.Summary{best}, metrics.ColumnType); err != nil {
		return results.Summary{}, nil, err
	}
	// Last: the cell is whole.
	return best, bestOverlaps, results.MarkDone(dir)
}

// attempts runs the cell until an attempt is not disturbed, or the
// quality rule's attempts are spent, and returns the attempt it reports:
// the clean one, or the least disturbed, marked. Each attempt's records
// go to rec, its captures to captureDir(attempt); the reported attempt's
// records come back too (the outlier rule's input).
func (sw Sweep) attempts(ctx context.Context, spec cellrun.CellSpec, rec *results.RecordWriter, captureDir func(int) string) (best results.Summary, bestOverlaps []testbed.LiveRun, bestAttempt int, bestRecords []results.Record, err error) {
	t, err := sw.Quality.Thresholds()
	if err != nil {
		return results.Summary{}, nil, 0, nil, err
	}
	run := sw.attempt
	if run == nil {
		run = cellrun.RunCell
	}
	bestWhy, bestSeverity := "", math.Inf(1)
	ran := 0
	for attempt := 1; attempt <= t.Attempts; attempt++ {
		rec.SetAttempt(attempt)
		spec.Cell.Attempt = attempt
		spec.CaptureDir = captureDir(attempt)
		res, err := run(ctx, spec, rec.Write, sw.Progress)
		if err != nil {
			return results.Summary{}, nil, 0, nil, err
		}
		ran++
		median := cellrun.MedianDelay(res.Records)
		why := sw.Quality.Disturbance(res.Summary, median)
		if sev := cellrun.Severity(res.Summary, median); why == "" || sev < bestSeverity {
			best, bestOverlaps, bestWhy, bestSeverity, bestAttempt = res.Summary, res.Overlaps, why, sev, attempt
			bestRecords = res.Records
			best.Set("attempt", float64(attempt))
		}
		if why == "" {
			break
		}
		if attempt < t.Attempts {
			sw.logf("cell %s, attempt %d: disturbed (%s); running it again", spec.Cell.ID, attempt, why)
		}
	}
	if bestWhy != "" {
		// Every attempt was disturbed: the least disturbed one is
		// reported, marked.
		sw.logf("warning: cell %s was disturbed in all %d attempts; reporting the least disturbed (%s)", spec.Cell.ID, ran, bestWhy)
		best.Set("quality", "disturbed: "+bestWhy)
	} else {
		best.Set("quality", "clean")
	}
	best.Set("attempts_discarded", float64(ran-1))
	return best, bestOverlaps, bestAttempt, bestRecords, nil
}

// summaryOutliers is the outlier rule the summary applied to the reported
// attempt's delays (the completed records past the warm-up), nil when the
// scenario asks for none: records.csv's in_summary leaves out what it
// removed.
func summaryOutliers(spec cellrun.CellSpec, records []results.Record) func(float64) bool {
	if !spec.RemoveOutliers {
		return nil
	}
	var delays []float64
	for _, r := range records {
		if !r.Warmup && r.OK() {
			delays = append(delays, r.DelayMs)
		}
	}
	return metrics.Outliers(delays, metrics.OutlierK)
}

// outlierRule is the summary's outlier rule when the scenario asks for
// one (metrics.remove_outliers), nil when not.
func outlierRule(remove bool) func([]float64) func(float64) bool {
	if !remove {
		return nil
	}
	return func(delays []float64) func(float64) bool { return metrics.Outliers(delays, metrics.OutlierK) }
}

// keepCaptures makes the reported attempt's captures the cell's captures/
// and removes every other attempt's, also those an interrupted earlier run
// left (a resumed cell starts over, so an old captures/ is replaced too).
func keepCaptures(dir string, attemptDir func(int) string, keep int) error {
	final := filepath.Join(dir, "captures")
	if err := os.RemoveAll(final); err != nil {
		return fmt.Errorf("replacing %s: %w", final, err)
	}
	if err := os.Rename(attemptDir(keep), final); err != nil {
		return fmt.Errorf("keeping attempt %d's captures: %w", keep, err)
	}
	others, err := filepath.Glob(filepath.Join(dir, "captures.attempt-*"))
	if err != nil {
		return err
	}
	for _, o := range others {
		if err := os.RemoveAll(o); err != nil {
			return fmt.Errorf("removing another attempt's captures: %w", err)
		}
	}
	return nil
}

// interleaveNetworks orders cells so that the cells that differ only in
// their network run one after the other: a remote run checked against its
// recording alternates the real path and its replay, so that a change of
// the path over the run affects both alike.
func interleaveNetworks(cells []plan.Cell) []plan.Cell {
	key := func(c plan.Cell) string {
		k := fmt.Sprintf("%s/%d", c.Protocol, c.Rep)
		for _, p := range c.Params {
			k += "/" + p.Value
		}
		return k
	}
	first := map[string]int{}
	for i, c := range cells {
		if _, ok := first[key(c)]; !ok {
			first[key(c)] = i
		}
	}
	out := slices.Clone(cells)
	slices.SortStableFunc(out, func(a, b plan.Cell) int { return first[key(a)] - first[key(b)] })
	return out
}
