package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"tlab/internal/untrusted"
)

// Check is one figure of a calibration beside its target.
type Check struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Interval, for a value that is a difference of two noisy
	// measurements, is its 95 % interval [low, high]; such a check passes
	// when the interval lies wholly within the target, fails when it lies
	// wholly outside, and is Inconclusive when it straddles it.
	Interval []float64 `json:"interval,omitempty"`
	Target   string    `json:"target"`
	Pass     bool      `json:"pass"`
	// Inconclusive marks a check (not passed) whose interval straddles
	// its target: the data show neither that the emulator meets it nor
	// that it misses it; more rounds narrow the interval.
	Inconclusive bool `json:"inconclusive,omitempty"`
	// Detail says how the figure was obtained or what surrounds it.
	Detail string `json:"detail,omitempty"`
	// Host, on a failed check, says how the host's own noise during the
	// same step explains the failure; empty when it does not.
	Host string `json:"host,omitempty"`
}

// ValueText is the value as a person reads it: with its interval, when it
// has one ("-5.5 [-10, 1]").
func (c Check) ValueText() string {
	if len(c.Interval) == 2 {
		return fmt.Sprintf("%g [%g, %g]", c.Value, c.Interval[0], c.Interval[1])
	}
	return fmt.Sprintf("%g", c.Value)
}

// HostNoise is what a host-noise probe saw over a window: how late a
// real-time thread per CPU woke from sleeping to an absolute time every
// millisecond (as cyclictest measures it), the CPU time the hypervisor
// stole, and the kernel's CPU pressure.
type HostNoise struct {
	// Step names what the window covered (a calibration step).
	Step       string  `json:"step,omitempty"`
	WindowS    float64 `json:"window_s"`
	WakeP50Us  float64 `json:"wakeup_p50_us"`
	WakeP99Us  float64 `json:"wakeup_p99_us"`
	WakeP999Us float64 `json:"wakeup_p999_us"`
	WakeMaxUs  float64 `json:"wakeup_max_us"`
	Wakeups    int     `json:"wakeups"`
	StealPct   float64 `json:"steal_pct"`
	// PressurePct is the share of the window in which some runnable
	// task waited for a CPU; −1 where the kernel has no PSI.
	PressurePct float64 `json:"cpu_pressure_pct"`
	// RealTime tells whether the probe's threads got real-time priority;
	// without it their figures include tlab's own busy-polling emulator.
	RealTime bool `json:"realtime"`
}

// Machine describes where something ran.
type Machine struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
	CPU      string `json:"cpu"`
	Cores    int    `json:"cores"`
	Go       string `json:"go"`
	TCPCC    string `json:"tcp_congestion_control"`
}

// Calibration is a tlab calibrate report: the emulator measured on this
// machine, each figure beside its target.
type Calibration struct {
	Tool     string    `json:"tool"`
	Machine  Machine   `json:"machine"`
	Mode     string    `json:"emulator_mode"`
	Engine   string    `json:"emulator_engine,omitempty"`
	Arrival  string    `json:"emulator_arrival,omitempty"`
	Started  time.Time `json:"started"`
	Duration float64   `json:"duration_s"`
	Checks   []Check   `json:"checks"`
	// Info holds figures reported for context, without a target.
	Info []Check `json:"info"`
	// Warnings say what may have disturbed the figures.
	Warnings []string `json:"warnings,omitempty"`
	// Host is the host-noise probe's view of each step.
	Host []HostNoise `json:"host,omitempty"`
	// Verdict is "pass", "host" (every failed check is explained by the
	// host's own noise in the same step: the host is too noisy for these
	// targets), "emulator" (a check failed that the host does not
	// explain: the emulator is inaccurate) or "inconclusive" (none failed,
	// but an interval straddles its target).
	Verdict string `json:"verdict,omitempty"`
	// RecommendedMode is the emulator timer mode calibration found best
	// for this machine (its own measurements of each mode), ModeReason
	// why.
	RecommendedMode string `json:"recommended_mode,omitempty"`
	ModeReason      string `json:"mode_reason,omitempty"`
}

// Pass is true when every check passed.
func (c *Calibration) Pass() bool {
	for _, ch := range c.Checks {
		if !ch.Pass {
			return false
		}
	}
	return len(c.Checks) > 0
}

// Manifest records what a run needs to be understood and repeated: the
// tool and its dependencies, the machine, the kernel's network settings,
// the resolved scenario and its seeds, and the emulator's calibration taken
// when the run started (and at every resume that took one).
type Manifest struct {
	// Format is the run directory's format version (FormatVersion when
	// written by this tlab; 0 in directories of format 1).
	Format       int               `json:"format"`
	Tool         string            `json:"tool"`
	Commit       string            `json:"commit,omitempty"`
	Modified     bool              `json:"modified,omitempty"`
	Go           string            `json:"go"`
	Dependencies map[string]string `json:"dependencies"`
	Hostname     string            `json:"hostname"`
	Kernel       string            `json:"kernel"`
	CPU          string            `json:"cpu"`
	Cores        int               `json:"cores"`
	Sysctls      map[string]string `json:"sysctls"`

	Scenario     string `json:"scenario"`
	Description  string `json:"description,omitempty"`
	ScenarioFile string `json:"scenario_file"`
	Workload     string `json:"workload,omitempty"`
	Seed         uint64 `json:"seed"`
	Cells        int    `json:"cells"`
	// Shard is "I/N" when the run holds one shard of the scenario's
	// TotalCells cells; a merged run lists its machines in Merged.
	Shard      string        `json:"shard,omitempty"`
	TotalCells int           `json:"total_cells,omitempty"`
	Merged     []MergedShard `json:"merged,omitempty"`
	// Params are the swept fields' keys, in the scenario's order.
	Params []string `json:"params"`
	// Plots are the plot kinds the scenario asked for; Table the
	// workload's table columns (the terminal's and the report's).
	Plots []string `json:"plots,omitempty"`
	// Baseline is the protocol the scenario's ratios divide by (study
	// D's ξ); empty when it names none.
	Baseline string   `json:"baseline,omitempty"`
	Table    []string `json:"table,omitempty"`

	Started  time.Time   `json:"started"`
	Resumed  []time.Time `json:"resumed,omitempty"`
	Finished *time.Time  `json:"finished,omitempty"`
	// Calibrations are tlab calibrate --quick reports, one per start (and
	// per resume that took one); empty only when asked.
	Calibrations []*Calibration `json:"calibrations"`
	// Quality is the rule that re-ran disturbed cells (normal, strict,
	// off).
	Quality string `json:"quality,omitempty"`
	// Warnings say what disturbed the run (other runs on the machine
	// during a cell, ...), one line each, as they happened.
	Warnings []string `json:"warnings,omitempty"`
	// Remote, when set, says the run measured a real path to a tlab
	// agent rather than an emulated link.
	Remote *Remote `json:"remote,omitempty"`
	// Placement, when set, says the run placed its cells at a site it was
	// given when it started (tlab run --remote), not at one its scenario
	// names: scenario.yaml holds the scenario as written, and a resume or
	// a merge places its cells again from this.
	Placement *Placement `json:"placement,omitempty"`
	// Requirements are the application's ("delay_p99_ms <= 20"), the
	// first the priority: the report opens with which stack meets them.
	Requirements []string `json:"requirements,omitempty"`
	// QoO is the Quality of Outcome requirement profile the answer scores
	// each stack against, as a LibreQoS profiles file holding it alone
	// (qoo.Profile.Wire), so that a report made later needs no file.
	QoO json.RawMessage `json:"qoo,omitempty"`
}

// Placement puts every cell of a run at one site: the scenario's
// profiles become Profiles (Network, and beside it what is compared with
// it, a recording of that path), and Network's cells run at Site (a kind
// of site, cellrun.RegisterSite).
type Placement struct {
	Site     string   `json:"site"`
	Network  string   `json:"network"`
	Profiles []string `json:"profiles"`
}

// Remote is the real path a remote run measured: the agent at its far
// end, and the path and both hosts as they were at each start and at the
// end of the run.
type Remote struct {
	Address     string `json:"address"`
	Fingerprint string `json:"agent_fingerprint"`
	Hostname    string `json:"agent_hostname"`
	// Emulated says what tlab emulated on this machine's side, in front
	// of the real path, in the scenario's words (--link up.loss=1% reads
	// "link: {up: {loss: 1%}}"); empty when the path was measured as it
	// is.
	Emulated string `json:"emulated_in_front,omitempty"`
	// Checks are the path's round trips, the agent's clock offset and
	// both hosts' noise, measured at each start and at the end.
	Checks []PathCheck `json:"checks"`
}

// PathCheck is one measurement of the path and of both hosts.
type PathCheck struct {
	When time.Time `json:"when"`
	// Phase is "start", "resume" or "end".
	Phase         string  `json:"phase"`
	RTTMinMs      float64 `json:"rtt_min_ms"`
	RTTMedianMs   float64 `json:"rtt_median_ms"`
	OffsetMs      float64 `json:"clock_offset_ms"`
	UncertaintyMs float64 `json:"clock_offset_uncertainty_ms"`
	Pings         int     `json:"pings"`
	// AgentNoise and LocalNoise are each host's own noise over the
	// same short window.
	AgentNoise HostNoise `json:"agent_noise"`
	LocalNoise HostNoise `json:"local_noise"`
}

// MergedShard is one shard of a merged run: where it ran, which cells it
// measured, and its calibrations.
type MergedShard struct {
	Dir          string         `json:"dir"`
	Shard        string         `json:"shard"`
	Hostname     string         `json:"hostname"`
	Kernel       string         `json:"kernel"`
	CPU          string         `json:"cpu"`
	Cells        []string       `json:"cells"`
	Calibrations []*Calibration `json:"calibrations"`
}

// ErrFormat is returned for a run directory written by a newer tlab.
var ErrFormat = errors.New("unsupported results format")

// Save writes the manifest atomically.
func (m *Manifest) Save(dir string) error {
	m.Format = FormatVersion
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// MaxManifestFile bounds what is read of a manifest.json: tlab writes a
// few KiB (machine, sysctls, seeds, calibration); 16 MiB leaves room for
// long requirement lists and notes.
const MaxManifestFile = 16 << 20

// ReadManifest reads a run's manifest. It is read inside the run
// directory only (a manifest.json that links out of it is refused), and
// only from a regular file (a FIFO or a device is refused at once). A manifest of a newer format than
// this tlab reads is refused with ErrFormat, naming both versions.
func ReadManifest(dir string) (*Manifest, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	b, err := untrusted.ReadFileIn(root, ManifestFile, MaxManifestFile)
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Format > FormatVersion {
		return nil, fmt.Errorf("%s: %w: written in format %d, this tlab reads formats 1 to %d (upgrade tlab)", dir, ErrFormat, m.Format, FormatVersion)
	}
	return &m, nil
}

// RealPath is the network name of a remote run's cells: the real path to
// the agent, on which nothing is emulated. It lives with the results, below
// both the site that places cells there (cellrun) and the replay step that
// reads them (analysis), so that neither imports the other.
const RealPath = "remote"

// Run is a results directory as read back.
type Run struct {
	Dir string
	// Manifest is nil for a directory without one (an ad-hoc --out of
	// format 1).
	Manifest *Manifest
	// Format is the directory's format version (1 when unrecorded).
	Format int
	Rows   []Summary
}

// Open reads a results directory: its manifest, if any, and its summary
// rows. It refuses a newer format than it reads, and says so.
func Open(dir string) (*Run, error) {
	r := &Run{Dir: dir, Format: 1}
	m, err := ReadManifest(dir)
	switch {
	case err == nil:
		r.Manifest = m
		r.Format = max(m.Format, 1)
	case errors.Is(err, ErrFormat):
		return nil, err
	case !os.IsNotExist(err):
		return nil, err
	}
	var params []string
	if r.Manifest != nil && r.Manifest.Format >= 2 {
		params = r.Manifest.Params
		if params == nil {
			params = []string{}
		}
	}
	r.Rows, err = Rows(dir, r.Manifest, params)
	if err != nil {
		return nil, fmt.Errorf("%w (is %s a tlab results directory?)", err, dir)
	}
	return r, nil
}

// ClockDrift is how far the agent's clock moved against this one between
// the first check of a run (its start) and its last (its end): the end's
// offset less the start's, and how much of that the two measurements'
// own uncertainties allow (their sum). Moved tells whether the drift is
// more than that: the one-way delays a run read across the path were
// corrected by the start's offset only, so by the end they are off by up
// to the drift. ok is false without a start and an end check.
func (r *Remote) ClockDrift() (driftMs, allowedMs float64, moved, ok bool) {
	if r == nil || len(r.Checks) < 2 {
		return 0, 0, false, false
	}
	first, last := r.Checks[0], r.Checks[len(r.Checks)-1]
	if last.Phase != "end" {
		return 0, 0, false, false
	}
	driftMs = last.OffsetMs - first.OffsetMs
	allowedMs = first.UncertaintyMs + last.UncertaintyMs
	return driftMs, allowedMs, math.Abs(driftMs) > allowedMs, true
}

// ClockDriftWarning says, for a run whose agent clock moved more than its
// measurements allow, what that means for its one-way delays; "" when it
// did not (or cannot be told).
func (r *Remote) ClockDriftWarning() string {
	drift, allowed, moved, ok := r.ClockDrift()
	if !ok || !moved {
		return ""
	}
	return fmt.Sprintf("the agent's clock moved %+.2f ms against this one's between the run's start and its end, more than the ±%.2f ms the two measurements allow: one-way delays across the path (owd_*) were corrected by the start's offset and are off by up to %.2f ms by the end (round trips and jitter are not affected)", drift, allowed, math.Abs(drift))
}
