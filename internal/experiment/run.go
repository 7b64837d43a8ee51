package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/invoker"
	"tlab/internal/plan"
	"tlab/internal/qoo"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/stacks"
	"tlab/internal/testbed"
)

// ErrReport marks a run whose cells completed but whose report could not
// be written.
var ErrReport = errors.New("report")

// Run is one scenario run into a run directory: what `tlab run` does for
// a scenario, a preset, an ad-hoc comparison or a resume, without printing.
type Run struct {
	// The scenario: in memory, or an ad-hoc run's document (the command
	// line's flags as scenario fields) parsed with Sets, or a file or
	// preset by name with Sets, or the run in Resume to continue. A
	// remote run places its cells at the agent's site (cellrun.PlaceAt):
	// the run directory keeps the scenario as written, the manifest the
	// placement.
	Scenario   *scenario.Scenario
	Adhoc      []byte
	NameOrFile string
	Sets       []string
	Resume     string
	// Out is the run directory; empty: DefaultDir, or with Temporary a
	// directory removed when the run's Outcome is closed.
	Out       string
	Temporary bool
	// ResumeExisting continues the run already in Out, if it is one of the
	// same scenario (a retried cluster task).
	ResumeExisting bool
	// Shard is "I/N" or "auto/N" (Getenv's task index picks I).
	Shard  string
	Getenv func(string) string

	NoCalibration, RequireCalibration, NoReport bool
	// Render renders the run's report (report.Render); nil, or NoReport:
	// the run has every file but report.html and plots/.
	Render Renderer
	// Quality is the rule that re-runs disturbed cells ("" keeps a
	// resumed run's own, and means normal otherwise).
	Quality string

	// Remote, when set, measures across the real path to a tlab agent
	// instead of emulated links (a resume of a remote run finds its agent
	// in the manifest). Replay, with it, names a recording of that path
	// (tlab record's profile): every cell runs across the path and on the
	// recording, alternately, and replay.csv says where they agree.
	Remote *cellrun.RemoteTarget
	Replay string
	// Requirements are the application's, kept in the manifest so that
	// the report opens with the answer (tlab advise).
	Requirements []advise.Requirement
	// QoO is the Quality of Outcome profile the answer scores against
	// (nil: the scenario's, if it names one).
	QoO *qoo.Profile

	Progress func(cellrun.Progress)
	Log      io.Writer
	// Ready is called once the scenario, its cells and the directory are
	// known, before any cell runs; an error stops the run and is returned
	// as it is (the command line checks privileges and prints the plan).
	Ready func(Ready) error
	// Now names the default directory (time.Now when nil).
	Now func() time.Time

	// AllowCommands lets the commands of a scenario's own stacks
	// (stacks:) run when the scenario comes from a file or a resumed run
	// directory: someone else may have written them. A preset's and an
	// in-memory scenario's run without it.
	AllowCommands bool
	// CommandsAs is whom those commands run as (invoker.Find: the
	// invoking user under sudo, doas or pkexec).
	CommandsAs invoker.User
}

// ErrCommandsNotAllowed is returned (as an ErrInput) for a scenario from
// a file or a resumed run directory that names commands, without
// AllowCommands.
var ErrCommandsNotAllowed = errors.New("commands not allowed")

// commandsNotAllowed says which commands would run, and how to allow
// them.
type commandsNotAllowed struct{ msg string }

func (e commandsNotAllowed) Error() string        { return e.msg }
func (e commandsNotAllowed) Is(target error) bool { return target == ErrCommandsNotAllowed }

// checkCommands refuses a scenario whose stacks name commands when they
// come from a file or a resumed directory and AllowCommands is not set.
func (r Run) checkCommands(sc *scenario.Scenario) error {
	if !stacks.Any(sc) || r.AllowCommands {
		return nil
	}
	var from string
	switch {
	case r.Resume != "":
		from = fmt.Sprintf("the run in %s (its %s may have come from anywhere)", r.Resume, results.ScenarioFile)
	case r.Scenario != nil, r.Adhoc != nil, IsPreset(r.NameOrFile):
		return nil
	default:
		from = r.NameOrFile
	}
	as := r.CommandsAs.Name
	if as == "" {
		as = "tlab's user"
	}
	msg := fmt.Sprintf("%s names commands that would run on this machine as %s:\n", from, as)
	for _, line := range stacks.Lines(sc) {
		msg += "  " + line + "\n"
	}
	msg += "Read them; to run them, give --allow-commands."
	return commandsNotAllowed{msg}
}

// Ready is what a run is about to do.
type Ready struct {
	Scenario  *scenario.Scenario
	Cells     []plan.Cell
	Plan      time.Duration
	Dir       string
	Temporary bool
	// Testbed says some cell runs on an emulated testbed here (the
	// command line checks privileges then); a run whose every cell
	// crosses a real path to an agent builds nothing here.
	Testbed bool
}

// Outcome is what a run did.
type Outcome struct {
	Scenario *scenario.Scenario
	// Cells is how many cells the run (or its shard) has; Rows the
	// summaries of those that completed.
	Cells     int
	Rows      []results.Summary
	Dir       string
	Temporary bool
	// Report is the report's path, when one was written.
	Report string
	// Analysis is the run's, as written into Dir (the answer among it).
	Analysis *analysis.Analysis
	// Requirements are those the answer follows: given, or the
	// scenario's.
	Requirements []advise.Requirement

	tmp *testbed.TempDir // the temporary directory, when Temporary
}

// Close removes a temporary run directory.
func (o Outcome) Close() error {
	if o.tmp != nil {
		return o.tmp.Remove()
	}
	return nil
}

// Execute runs (or resumes) the scenario into its run directory and builds
// the report. Errors in the input wrap ErrInput; an interrupted run
// returns context.Canceled with the rows it completed. The caller closes
// the Outcome (a temporary directory is removed then).
func (r Run) Execute(ctx context.Context) (Outcome, error) {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Getenv == nil {
		r.Getenv = os.Getenv
	}
	if err := r.continueExisting(); err != nil {
		return Outcome{}, err
	}
	sc, placed, cells, shard, err := r.compile()
	if err != nil {
		return Outcome{}, err
	}
	out, err := r.outcomeFor(sc)
	if err != nil {
		return Outcome{}, err
	}
	all := cells
	if r.Shard != "" {
		cells = shard.Of(cells)
	}
	out.Cells = len(cells)
	if r.Ready != nil {
		if err := r.Ready(Ready{Scenario: sc, Cells: cells, Plan: Plan(cells), Dir: out.Dir, Temporary: out.Temporary, Testbed: buildsTestbed(sc, cells)}); err != nil {
			return out, err
		}
	}
	sweepDeadRuns(r.Log)
	if len(r.Requirements) == 0 {
		r.Requirements = advise.RequirementsOf(sc) // the scenario's own, unless given
	}
	out.Requirements = r.Requirements
	if r.QoO == nil {
		if p, ok := qoo.ProfileOf(sc); ok {
			r.QoO = &p
		}
	}
	if out.Rows, err = r.sweep(ctx, sc, placed, all, cells, shard, out.Dir); err != nil {
		return out, err
	}
	render := r.Render
	if r.NoReport {
		render = nil
	}
	done, err := Analyze(out.Dir, r.Requirements, render)
	out.Report, out.Analysis = done.Report, done.Analysis
	return out, err
}

// compile reads the run's scenario (placed: where a remote run placed
// its cells), checks what the command line asked of it, and compiles its
// cells; errors wrap ErrInput.
func (r Run) compile() (*scenario.Scenario, *cellrun.Placed, []plan.Cell, Shard, error) {
	sc, placed, err := r.scenario()
	if err != nil {
		return nil, nil, nil, Shard{}, cellrun.InputErr(err)
	}
	if err := r.checkCommands(sc); err != nil {
		return nil, nil, nil, Shard{}, cellrun.InputErr(err)
	}
	if sc.Capture && r.Temporary && r.Out == "" {
		return nil, nil, nil, Shard{}, cellrun.InputErr(errors.New("--capture needs --out DIR"))
	}
	cells, err := plan.Compile(sc)
	if err != nil {
		return nil, nil, nil, Shard{}, cellrun.InputErr(err)
	}
	// On a real path, the link overrides are emulated in front of it.
	inFront := sc.LinkOverrides()
	if r.Replay != "" && inFront != "" {
		// On the recording the overrides would replace the fitted fields,
		// on the path they are added in front of it: the two would not
		// compare.
		return nil, nil, nil, Shard{}, cellrun.InputErr(fmt.Errorf("--replay compares a recording with the path as it is; this run also emulates %s in front of the path: run the two apart", inFront))
	}
	if r.Quality != "" && !slices.Contains(cellrun.QualityModes, r.Quality) {
		return nil, nil, nil, Shard{}, cellrun.InputErr(fmt.Errorf("--quality %q: want %s", r.Quality, strings.Join(cellrun.QualityModes, ", ")))
	}
	var shard Shard
	if r.Shard != "" {
		spec, err := ShardFromEnv(r.Shard, r.Getenv)
		if err == nil {
			shard, err = ParseShard(spec)
		}
		if err != nil {
			return nil, nil, nil, Shard{}, cellrun.InputErr(fmt.Errorf("--%w", err))
		}
	}
	if _, auto := sc.AutoRepetitions(); auto && r.Shard != "" {
		return nil, nil, nil, Shard{}, cellrun.InputErr(errors.New("repetitions: auto decides where to repeat from every stack's cells at a point: run it whole, not as shards"))
	}
	return sc, placed, cells, shard, nil
}

// outcomeFor is the run's outcome before it runs: its directory (the
// resumed one, a temporary one, --out, or results/NAME-TIME).
func (r Run) outcomeFor(sc *scenario.Scenario) (Outcome, error) {
	out := Outcome{Scenario: sc, Dir: r.Out}
	switch {
	case r.Resume != "":
		out.Dir = r.Resume
	case out.Dir == "" && r.Temporary:
		// Recorded in the run registry first: a kill -9 leaves no
		// directory that tlab cleanup does not know of.
		tmp, err := testbed.MakeTempDir("adhoc")
		if err != nil {
			return Outcome{}, err
		}
		out.tmp, out.Dir, out.Temporary = tmp, tmp.Path, true
	case out.Dir == "":
		out.Dir = DefaultDir(sc.Name, r.Now())
	}
	return out, nil
}

// sweep starts the run's sites, sweeps its cells (with repetitions:
// auto, until its verdicts are decided) and finishes the sites.
func (r Run) sweep(ctx context.Context, sc *scenario.Scenario, placed *cellrun.Placed, all, cells []plan.Cell, shard Shard, dir string) ([]results.Summary, error) {
	sw := Sweep{Placed: placed, Requirements: r.Requirements, QoO: r.QoO, Shard: shard, Scenario: sc, Cells: all, Dir: dir, Resume: r.Resume != "", SkipCalibration: r.NoCalibration,
		Progress: r.Progress, Log: r.Log, Quality: cellrun.Quality{Mode: r.Quality}, RequireCalibration: r.RequireCalibration, CommandsAs: r.CommandsAs.Cred, CommandsEnv: r.CommandsAs.Env}
	given := map[string]any{}
	if r.Remote != nil {
		given[cellrun.AgentSite] = r.Remote
	}
	sites, err := cellrun.StartSites(ctx, cellrun.SiteSetup{Scenario: sc, Dir: dir, Resume: r.Resume != "", Log: r.Log}, all, given)
	if err != nil {
		return nil, err
	}
	sw.Sites = sites
	rows, err := sw.Run(ctx)
	if maxReps, auto := sc.AutoRepetitions(); err == nil && auto {
		rows, err = sw.repeatUntilDecided(ctx, cells, maxReps, rows)
	}
	err = sites.Finish(err == nil, err)
	if errors.Is(err, ErrRunExists) {
		err = cellrun.InputErr(err)
	}
	return rows, err
}

// continueExisting turns a run whose Out already holds an interrupted run
// of the same scenario into a resume of it (ResumeExisting).
func (r *Run) continueExisting() error {
	if !r.ResumeExisting || r.Resume != "" || r.Out == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(r.Out, results.ScenarioFile)); err != nil {
		return nil
	}
	prev, err1 := OpenResume(r.Out)
	want, err2 := LoadScenario(r.NameOrFile, r.Sets)
	if err := errors.Join(err1, err2); err != nil {
		return cellrun.InputErr(err)
	}
	if prev.Name != want.Name {
		return cellrun.InputErr(fmt.Errorf("%s holds a run of %s, not of %s: choose another --out", r.Out, prev.Name, want.Name))
	}
	if r.Log != nil {
		fmt.Fprintf(r.Log, "%s holds an interrupted run: continuing it (--resume-existing)\n", r.Out)
	}
	r.Resume, r.NameOrFile, r.Sets, r.Shard = r.Out, "", nil, ""
	return nil
}

// scenario is the run's scenario: in memory, resumed or loaded; for a
// remote run its cells placed at the agent's site, and placed says so
// (nil for a run whose scenario places its own cells, and for a resume:
// OpenResume places its cells as the manifest says).
func (r Run) scenario() (sc *scenario.Scenario, placed *cellrun.Placed, err error) {
	switch {
	case r.Resume != "":
		if r.NameOrFile != "" || len(r.Sets) > 0 || r.Scenario != nil {
			return nil, nil, errors.New("--resume DIR continues the run's own scenario; give no file and no --set")
		}
		sc, err = OpenResume(r.Resume)
		return sc, nil, err
	case r.Scenario != nil:
		sc = r.Scenario
	case r.Adhoc != nil:
		sc, err = scenario.Parse("the command line", r.Adhoc, r.Sets...)
	default:
		sc, err = LoadScenario(r.NameOrFile, r.Sets)
	}
	if err != nil || r.Remote == nil || r.Remote.Addr == "" {
		return sc, nil, err
	}
	// Every cell of a remote run crosses the real path at the agent's
	// site (and, with a recording, that recording in turn).
	var beside []string
	if r.Replay != "" {
		beside = append(beside, r.Replay)
	}
	placement, err := cellrun.PlaceAt(cellrun.AgentSite, beside...)
	if err != nil {
		return nil, nil, err
	}
	placedSc, err := cellrun.ApplyPlacement(sc, placement)
	if err != nil {
		return nil, nil, err
	}
	return placedSc, &cellrun.Placed{Written: sc, Placement: placement}, nil
}

// sweepDeadRuns removes what runs killed before they could clean up left
// behind (their temp directories, records and any child still running),
// so that a kill followed by a resume leaves nothing, as `tlab cleanup`
// would. Live runs, this one's neighbours included, are not touched: the
// registry knows a run's owner by PID and start time.
func sweepDeadRuns(log io.Writer) {
	actions, err := testbed.Cleanup(false)
	if log == nil {
		return
	}
	if err != nil {
		fmt.Fprintf(log, "warning: could not clean up after earlier runs: %v (tlab cleanup)\n", err)
	}
	for _, line := range sweepLines(actions) {
		fmt.Fprintln(log, line)
	}
}

// sweepLines says what a sweep of dead runs did: a warning for each
// action that failed or was refused, and how many runs it cleaned up
// after. A run counts only where something was done for it and nothing
// failed: a refused record (another user's, or one with a field tlab
// would not write) is a warning, never "removed".
func sweepLines(actions []testbed.CleanupAction) []string {
	var lines []string
	cleaned, failed := map[string]bool{}, map[string]bool{}
	for _, a := range actions {
		if a.Error != "" {
			failed[a.Run] = true
			lines = append(lines, fmt.Sprintf("warning: cleaning up after run %s: %s: %s", a.Run, a.What, a.Error))
			continue
		}
		if a.Done {
			cleaned[a.Run] = true
		}
	}
	for run := range failed {
		delete(cleaned, run)
	}
	switch len(cleaned) {
	case 0:
	case 1:
		lines = append(lines, "removed what a killed tlab run left behind (temp files, its record)")
	default:
		lines = append(lines, fmt.Sprintf("removed what %d killed tlab runs left behind (temp files, their records)", len(cleaned)))
	}
	return lines
}
