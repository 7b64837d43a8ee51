package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"tlab/internal/emu"
	"tlab/internal/explore"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/scenario"
)

// AblationDir is where an exploration keeps the runs of its ablations:
// one ordinary run directory per removal (ablation/no-jitter/), each
// holding the boundaries' bracketing points measured without that
// impairment (the same repetitions, so the same seeds). A removal sets
// a field the exploration's own cells do not sweep, and a run's
// records.csv has one set of columns: so each is a run of its own, that
// tlab report and tlab stats read like any other.
const AblationDir = "ablation"

// removal is one impairment tlab knows how to take off a link, or off
// the stacks (fromStacks).
type removal struct {
	name, impairment string
	// fromStacks, when set, is a removal of the stacks' settings, not
	// the link's: the settings that take the impairment off the
	// scenario's stacks, or none and why.
	fromStacks func(sc *scenario.Scenario) ([]explore.Setting, string)
	// field is the link field that carries the impairment: an explored
	// parameter of that field makes it present.
	field   string
	present func(emu.DirectionConfig) bool
	// settings take it off (given the link, for the fields that depend
	// on it).
	settings func(emu.LinkConfig) []explore.Setting
}

// removals are the ablations `tlab explore --why` tries, in order: no
// loss, no jitter, no queue (the rate limit and its buffer: nothing waits
// or is dropped at a bottleneck), no handshakes (every reconnection
// resumed, with 0-RTT where the stack can).
var removals = []removal{
	{name: "no loss", impairment: "loss", field: "loss",
		present: func(d emu.DirectionConfig) bool { return d.Loss != (emu.LossConfig{}) },
		settings: func(emu.LinkConfig) []explore.Setting {
			return []explore.Setting{{Path: "link.loss", Value: "0%"}}
		}},
	{name: "no jitter", impairment: "jitter", field: "jitter",
		present: func(d emu.DirectionConfig) bool { return d.Jitter > 0 },
		settings: func(l emu.LinkConfig) []explore.Setting {
			s := []explore.Setting{{Path: "link.jitter", Value: "0ms"}}
			// Correlated jitter without jitter is refused: take the
			// correlation off too.
			if l.Up.JitterCorrelation > 0 || l.Down.JitterCorrelation > 0 {
				s = append(s, explore.Setting{Path: "link.jitter_correlation", Value: "0%"})
			}
			if l.Up.JitterCoherence > 0 || l.Down.JitterCoherence > 0 {
				s = append(s, explore.Setting{Path: "link.jitter_coherence", Value: "0ms"})
			}
			return s
		}},
	{name: "no queue", impairment: "queueing", field: "rate",
		present: func(d emu.DirectionConfig) bool { return d.Rate > 0 || d.Trace != "" },
		settings: func(emu.LinkConfig) []explore.Setting {
			return []explore.Setting{{Path: "link.rate", Value: "0"}}
		}},
	{name: "no handshakes", impairment: "full handshakes", fromStacks: resumeHandshakes},
}

// resumeHandshakes takes full handshakes off the stacks' reconnections:
// every new connection after the first resumes its TLS session
// (settings.resumption) and, where the stack can, sends its first data
// with the handshake (settings.zero_rtt: QUIC's 0-RTT), so that a
// reconnection costs no handshake round trip before its data. A setting
// is set only when the scenario has it off and one of its stacks honours
// it (a setting none honours is refused).
func resumeHandshakes(sc *scenario.Scenario) ([]explore.Setting, string) {
	set := sc.ProtoSettings()
	honoured := func(name string) bool {
		return slices.ContainsFunc(sc.Protocols, func(p string) bool { return slices.Contains(proto.Options(p), name) })
	}
	var out []explore.Setting
	if !set.Resumption && honoured("resumption") {
		out = append(out, explore.Setting{Path: "settings.resumption", Value: "true"})
	}
	if !set.ZeroRTT && honoured("zero_rtt") {
		out = append(out, explore.Setting{Path: "settings.zero_rtt", Value: "true"})
	}
	if len(out) == 0 {
		if !honoured("resumption") {
			return nil, "no stack has a TLS session to resume"
		}
		return nil, "the stacks already resume their sessions (and send 0-RTT data where they can)"
	}
	return out, ""
}

// ablationsFor are the removals for a scenario's link at its first
// profile: each with the settings that take it off, or Absent (with a
// note) when the link has none of it or it cannot be taken off. An
// explored parameter of the impairment's field makes it present: the
// map's points have it where the base link does not.
func ablationsFor(sc *scenario.Scenario, params []explore.Param) []explore.Ablation {
	profile := sc.Profiles[0]
	link, err := sc.LinkFor(profile)
	var out []explore.Ablation
	for _, r := range removals {
		a := explore.Ablation{Name: r.name, Impairment: r.impairment}
		if r.fromStacks != nil {
			a.Settings, a.Note = r.fromStacks(sc)
			if len(a.Settings) > 0 {
				// The cell with them must be one the scenario accepts.
				if _, _, err := sc.CellAt(profile, sc.Protocols[0], 1, asParams(a.Settings)); err != nil {
					a.Settings, a.Note = nil, fmt.Sprintf("%s cannot be taken off these stacks: %v", r.impairment, err)
				}
			}
			a.Absent = len(a.Settings) == 0
			out = append(out, a)
			continue
		}
		explored := slices.ContainsFunc(params, func(p explore.Param) bool { return p.Path[strings.LastIndex(p.Path, ".")+1:] == r.field })
		switch {
		case err != nil:
			a.Absent, a.Note = true, fmt.Sprintf("the link could not be read (%v): %s not tried", err, r.name)
		case !explored && !r.present(link.Up) && !r.present(link.Down):
			a.Absent, a.Note = true, fmt.Sprintf("the link has no %s to remove", r.impairment)
		case link.Up.Trace != "" || link.Down.Trace != "":
			if r.impairment == "queueing" {
				a.Absent, a.Note = true, "the link's rate is a trace: its queue is not removed"
				break
			}
			fallthrough
		default:
			a.Settings = r.settings(link)
			if why := takesOff(sc, profile, a.Settings, r); why != "" {
				a.Absent, a.Note, a.Settings = true, fmt.Sprintf("%s cannot be taken off this link: %s", r.impairment, why), nil
			}
		}
		out = append(out, a)
	}
	return out
}

// takesOff checks that the settings leave the link without the
// impairment in both directions ("" when they do): a scenario's up: or
// down: overrides would keep it, and then the removal would say nothing.
func takesOff(sc *scenario.Scenario, profile string, settings []explore.Setting, r removal) string {
	_, point, err := sc.CellAt(profile, sc.Protocols[0], 1, asParams(settings))
	if err != nil {
		return err.Error()
	}
	link, err := point.LinkFor(profile)
	if err != nil {
		return err.Error()
	}
	if r.present(link.Up) || r.present(link.Down) {
		return "the scenario's up: or down: settings keep it"
	}
	return ""
}

func asParams(settings []explore.Setting) []results.Param {
	var params []results.Param
	for _, s := range settings {
		params = append(params, results.Param{Key: s.Path, Value: s.Value})
	}
	return params
}

// ablationMeasurer is the run of one removal: its own run directory under
// the exploration's, whose scenario is the exploration's with the
// impairment taken off (and no explore: section), whose cells are the
// boundaries' bracketing points with the removal's fields set
// (scenario.CellAt: the repetition's seed, as in the map).
func (e Exploration) ablationMeasurer(sc *scenario.Scenario, dir string, base Sweep) func(explore.Ablation) (explore.Measurer, error) {
	return func(a explore.Ablation) (explore.Measurer, error) {
		_, point, err := sc.CellAt(sc.Profiles[0], sc.Protocols[0], 1, asParams(a.Settings))
		if err != nil {
			return nil, err
		}
		d := filepath.Join(dir, AblationDir, strings.ReplaceAll(a.Name, " ", "-"))
		sw := base
		sw.Scenario, sw.Dir, sw.SkipCalibration = point, d, true
		_, err = os.Stat(filepath.Join(d, results.ScenarioFile))
		sw.Resume = err == nil
		if e.Log != nil {
			fmt.Fprintf(e.Log, "why: the boundaries' neighbours %s (%s), into %s\n", strings.Replace(a.Name, "no ", "without ", 1), settingsText(a.Settings), d)
		}
		return &cellMeasurer{scenario: sc, sweep: sw, runner: e.Rounds}, nil
	}
}

func settingsText(s []explore.Setting) string {
	var parts []string
	for _, x := range s {
		parts = append(parts, x.Path+"="+x.Value)
	}
	return strings.Join(parts, " ")
}

// explain ablates the map's boundaries (explore.Explain) with what the
// budget leaves after the map: its cells less the map's, its duration
// less the time since start. Each removal's run directory gets its
// analysis, as any run's.
func (e Exploration) explain(ctx context.Context, sc *scenario.Scenario, m *explore.Map, cfg explore.Config, dir string, base Sweep, start time.Time) error {
	left := explore.Budget{}
	if b := cfg.Budget.Cells; b > 0 {
		left.Cells = b - m.Cells
		if left.Cells <= 0 {
			left.Cells = -1 // nothing left
		}
	}
	if d := cfg.Budget.Duration; d > 0 {
		left.Duration = d - e.Now().Sub(start)
		if left.Duration <= 0 {
			left.Cells = -1
		}
	}
	ex, err := explore.Explain(ctx, m, cfg, ablationsFor(sc, cfg.Params), e.ablationMeasurer(sc, dir, base), left)
	m.Why = ex
	runs, _ := filepath.Glob(filepath.Join(dir, AblationDir, "*", results.ScenarioFile))
	for _, f := range runs {
		// Analysed, not rendered: the exploration's report holds the why.
		if _, aerr := Analyze(filepath.Dir(f), base.Requirements, nil); aerr != nil && err == nil {
			err = fmt.Errorf("the analysis of %s: %w", filepath.Dir(f), aerr)
		}
	}
	return err
}
