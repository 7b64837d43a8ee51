// Package scenario describes an experiment as data: a YAML file names the
// topology and link profiles, the protocols, the workload and its
// parameters, a matrix of values to sweep (any field, by its dotted path),
// repetitions, durations, the seed, and the metrics and plots to produce.
// Files are validated strictly: a mistake is reported with the file, the
// line and what was expected.
package scenario

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/emu"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
	"tlab/internal/untrusted"
	"tlab/internal/workload"
)

// Scenario is one experiment.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Study names the published study the scenario reproduces, if any.
	Study string `yaml:"study"`
	// Topology names the hosts and links (see Topology); a plain name
	// ("client-server") is the short form.
	Topology yaml.Node `yaml:"topology"`
	// Profiles are link profile stacks ("5g", "wifi+loss-ge-b"); each is
	// a network of the experiment, applied to every link the topology
	// does not give a profile of its own. Link applies field overrides to
	// each.
	Profiles []string `yaml:"profiles"`
	// Sites gives a network of Profiles a site instead of an emulated
	// link: {remote: agent} runs that network's cells across the real
	// path to the run's tlab agent (tlab run --remote sets it). Each kind
	// is registered by the package that runs cells there.
	Sites     map[string]string `yaml:"sites"`
	Link      yaml.Node         `yaml:"link"`
	Protocols []string          `yaml:"protocols"`
	// Workload is the traffic pattern: a type (see tlab workloads) and
	// the type's own parameters, decoded by the type itself.
	Workload yaml.Node `yaml:"workload"`
	// Duration (or Count) is the measured part of each cell, after
	// Warmup.
	Duration units.Duration `yaml:"duration"`
	Count    int            `yaml:"count"`
	Warmup   units.Duration `yaml:"warmup"`
	// Repetitions is a count, or "auto": each cell's point is repeated
	// (from AutoMinRepetitions) until the answer's verdicts there are
	// decided by an always-valid sequential test, or MaxRepetitions.
	Repetitions    int    `yaml:"repetitions"`
	MaxRepetitions int    `yaml:"max_repetitions"`
	Seed           uint64 `yaml:"seed"`
	// Order is "fixed" (profiles, then matrix values, then protocols,
	// then repetitions) or "random" (shuffled with the seed).
	Order string `yaml:"order"`
	// Matrix maps dotted paths of this file's fields to lists of values,
	// for example workload.interval: [5ms, 25ms, 100ms].
	Matrix yaml.Node `yaml:"matrix"`
	// Settings are the protocols' settings, decoded strictly into
	// proto.Settings by their names there (tlab protocols lists which
	// protocol honours which).
	Settings yaml.Node `yaml:"settings"`
	Metrics  Metrics   `yaml:"metrics"`
	Plots    []string  `yaml:"plots"`
	Capture  bool      `yaml:"capture"`
	Emulator Emulator  `yaml:"emulator"`
	// Baseline is the protocol ratios divide by (study D's ξ = T / T of
	// MQTT over TLS): the study's reference, named, never the first
	// protocol listed by accident. Empty: figures that need one say
	// which they took.
	Baseline string `yaml:"baseline"`
	// The sections other packages own (RegisterSection) are not fields:
	// cross: (traffic beside the workload, package cross), require: (the
	// application's requirements, package advise), qoo: (its Quality of
	// Outcome profile, package qoo), explore: (ranges to search, package
	// explore). nodes are the present ones' nodes, values what their
	// Decode made of them.
	nodes  map[string]*yaml.Node
	values map[string]any
	// provided are the protocol names a section gives (the stacks:
	// section's own stacks): protocols: may list them, and the section
	// checks them, not the protocol registry.
	provided map[string]bool
	// links are the profiles' links (overrides applied), resolved once
	// by validate and read by LinkFor and TestbedTopology (the plan's
	// estimate and the cell's spec); fixed are topology.links' own.
	// resolved counts the resolutions this scenario made (tests).
	links    map[string]emu.LinkConfig
	fixed    map[string]emu.LinkConfig
	resolved int64
	// traces are the mean rates of the trace files the scenario's links
	// replay, shared with its cells' scenarios: each file is read once.
	traces *traceRates

	file string
	root *yaml.Node
	// auto: repetitions: auto (the decoded Repetitions is the minimum).
	auto     bool
	workload workload.Workload
	// warnings are what validation found legitimate but worth saying
	// (an overload experiment), each at its file and line.
	warnings []string
	topology Topology
	// plotKinds are the plots the workload offers (nil: not checked).
	plotKinds []string
	settings  proto.Settings
	// cell: one point of a matrix (a cell's scenario, or a swept value
	// checked alone), whose requirements the whole scenario judges.
	cell bool
	// whole are the warnings found on the whole scenario (a requirement
	// no cell produces, a figure no row fits), carried by every cell's.
	whole []string
}

// Metrics choose optional statistics.
type Metrics struct {
	RemoveOutliers bool `yaml:"remove_outliers"`
}

// Emulator chooses the emulator's timer mode, where it takes a frame's
// arrival time from (kernel, the default, or read), its engine (ring, the
// default, or mmsg) and its loop's CPU: see docs/methodology.md. The same
// options reach the opening calibration and every cell's engine.
type Emulator = emu.EngineOptions

// Load reads and validates a scenario file, with overrides ("key=value",
// dotted paths) applied on top.
func Load(file string, overrides ...string) (*Scenario, error) {
	data, err := untrusted.ReadFile(file, results.MaxScenarioFile)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(file, data, overrides...)
}

// Parse reads and validates a scenario from data.
func Parse(file string, data []byte, overrides ...string) (*Scenario, error) {
	root, err := strictyaml.Parse(file, data)
	if err != nil {
		return nil, err
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--set %q: want key=value, for example workload.interval=10ms", o)
		}
		var val yaml.Node
		if err := yaml.Unmarshal([]byte(v), &val); err != nil || len(val.Content) == 0 {
			val = yaml.Node{Kind: yaml.ScalarNode, Value: v}
		} else {
			val = *val.Content[0]
		}
		setLines(&val, 0)
		if err := setPath(root, strings.Split(strings.TrimSpace(k), "."), &val); err != nil {
			return nil, fmt.Errorf("--set %s: %w", k, err)
		}
	}
	return decode(file, root, false, nil)
}

// decode turns a node tree into a validated scenario; cell marks one point
// of a matrix.
func decode(file string, root *yaml.Node, cell bool, traces *traceRates) (*Scenario, error) {
	if traces == nil {
		traces = &traceRates{}
	}
	s := &Scenario{cell: cell, traces: traces}
	src, auto := withAutoRepetitions(root)
	src, nodes, err := splitSections(file, src)
	if err != nil {
		return nil, err
	}
	s.nodes = nodes
	if err := strictyaml.Decode(file, src, s); err != nil {
		return nil, err
	}
	if s.provided, err = providedProtocols(file, nodes); err != nil {
		return nil, err
	}
	s.file, s.root, s.auto = file, root, auto
	s.defaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Scenario) defaults() {
	// Only an absent repetitions means one: a written 0 is refused by
	// validate where it was written.
	if s.Repetitions == 0 && nodeAt(s.root, []any{"repetitions"}) == nil {
		s.Repetitions = 1
	}
	if s.auto && s.MaxRepetitions == 0 {
		s.MaxRepetitions = DefaultMaxRepetitions
	}
	if s.Order == "" {
		s.Order = "fixed"
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
}

// errAt makes an error at the line of the node at path (or the root).
func (s *Scenario) errAt(path []any, format string, args ...any) error {
	// An error that already says where it stands in this scenario (a
	// line of its own, or a --set override) is not placed again: the
	// line of the path would be a second, wrong place ("quick:7: quick,
	// in a --set override: ...").
	if len(args) == 1 && format == "%v" {
		var placed *strictyaml.Error
		if err, ok := args[0].(error); ok && errors.As(err, &placed) && placed.File == s.file {
			return err
		}
	}
	n := nodeAt(s.root, path)
	line := 1
	if n != nil {
		line = n.Line
	}
	return &strictyaml.Error{File: s.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (s *Scenario) validate() error {
	if s.Name == "" {
		return s.errAt(nil, "a scenario needs a name")
	}
	if len(s.Profiles) == 0 {
		return s.errAt(nil, "profiles: give at least one link profile (see tlab profiles)")
	}
	links, err := s.resolveProfiles()
	if err != nil {
		return err
	}
	if err := s.validateSites(); err != nil {
		return err
	}
	if err := s.validateProtocols(); err != nil {
		return err
	}
	if err := s.validateCounts(); err != nil {
		return err
	}
	if err := s.decodeWorkload(); err != nil {
		return err
	}
	if err := s.checkWorkloadFits(); err != nil {
		return err
	}
	if err := s.decodeTopology(); err != nil {
		return err
	}
	if err := s.checkOffered(links); err != nil {
		return err
	}
	if s.Order != "fixed" && s.Order != "random" {
		return s.errAt([]any{"order"}, "order %q: want fixed or random", s.Order)
	}
	if err := s.validatePlots(); err != nil {
		return err
	}
	if err := s.decodeSections(); err != nil {
		return err
	}
	if s.Baseline != "" && !slices.Contains(s.Protocols, s.Baseline) {
		return s.errAt([]any{"baseline"}, "baseline %q: not one of the scenario's protocols (%s)", s.Baseline, strings.Join(s.Protocols, ", "))
	}
	if field, err := s.Emulator.Validate(); err != nil {
		return s.errAt([]any{"emulator", field}, "emulator %v", err)
	}
	if err := s.decodeSettings(); err != nil {
		return err
	}
	if err := s.validateMatrix(); err != nil {
		return err
	}
	if err := s.checkCellCount(); err != nil {
		return err
	}
	if err := s.checkSections(); err != nil {
		return err
	}
	s.warnings = append(s.warnings, s.whole...)
	return nil
}

// resolveProfiles resolves each profile's link (overrides applied) once,
// refusing an unknown or repeated profile.
func (s *Scenario) resolveProfiles() ([]emu.LinkConfig, error) {
	links := make([]emu.LinkConfig, len(s.Profiles))
	s.links = map[string]emu.LinkConfig{}
	for i, p := range s.Profiles {
		var err error
		if links[i], err = s.resolveLink(p); err != nil {
			// An error in this file's link: section already says where.
			if se := (*strictyaml.Error)(nil); errors.As(err, &se) && se.File == s.file && se.Line > 0 {
				return nil, err
			}
			return nil, s.errAt([]any{"profiles", i}, "%v", notAProfile(p, err))
		}
		if slices.Index(s.Profiles, p) < i {
			return nil, s.errAt([]any{"profiles", i}, "profile %q is listed twice", p)
		}
		s.links[p] = links[i]
	}
	return links, nil
}

// validateProtocols checks protocols: each registered (or provided by a
// section: the scenario's own stacks) and listed once.
func (s *Scenario) validateProtocols() error {
	if len(s.Protocols) == 0 {
		return s.errAt(nil, "protocols: give at least one of %s", strings.Join(proto.Names(), ", "))
	}
	for i, p := range s.Protocols {
		if s.provided[p] {
			continue
		}
		if _, err := proto.Lookup(p); err != nil {
			return s.errAt([]any{"protocols", i}, "%v", err)
		}
		if slices.Index(s.Protocols, p) < i {
			return s.errAt([]any{"protocols", i}, "protocol %q is listed twice; use repetitions to run it again", p)
		}
	}
	return nil
}

// validateCounts checks the scenario's durations, count and repetitions.
func (s *Scenario) validateCounts() error {
	switch {
	case s.Duration < 0:
		return s.errAt([]any{"duration"}, "duration %v is negative", s.Duration)
	case s.Count < 0:
		return s.errAt([]any{"count"}, "count %d is negative", s.Count)
	case s.Warmup < 0:
		return s.errAt([]any{"warmup"}, "warmup %v is negative", s.Warmup)
	case s.Repetitions < 1:
		return s.errAt([]any{"repetitions"}, "repetitions must be at least 1, or auto")
	case s.MaxRepetitions != 0 && !s.auto:
		return s.errAt([]any{"max_repetitions"}, "max_repetitions goes with repetitions: auto")
	case s.auto && s.MaxRepetitions < AutoMinRepetitions:
		return s.errAt([]any{"max_repetitions"}, "max_repetitions %d: repetitions: auto starts with %d", s.MaxRepetitions, AutoMinRepetitions)
	case s.Duration > 0 && s.Count > 0:
		return s.errAt([]any{"count"}, "give duration or count, not both (duration %v, count %d)", s.Duration, s.Count)
	}
	return nil
}

// checkWorkloadFits checks that every registered protocol can carry the
// workload and that a cell's records fit tlab's budget.
func (s *Scenario) checkWorkloadFits() error {
	for i, p := range s.Protocols {
		if s.provided[p] {
			continue
		}
		if err := s.workload.Info().Accepts(p); err != nil {
			return s.errAt([]any{"protocols", i}, "%v", err)
		}
	}
	if n := s.workload.Info().Records; n > workload.MaxRecordsPerCell {
		key := "duration"
		if s.Count > 0 {
			key = "count"
		}
		return s.errAt([]any{key}, "a cell would hold %d records, more than tlab's budget of %d (about 3 GiB of memory and 0.7 GB of records.csv at the budget): shorten %s or lengthen the interval", n, workload.MaxRecordsPerCell, key)
	}
	return nil
}

// validatePlots checks plots: each a plot the workload draws; one whose
// figure a matrix does not fix is a warning.
func (s *Scenario) validatePlots() error {
	for i, p := range s.Plots {
		spec, err := results.ParsePlotSpec(p)
		if err != nil {
			return s.errAt([]any{"plots", i}, "%v", err)
		}
		if !slices.Contains(s.plotKinds, spec.Kind) && s.plotKinds != nil {
			return s.errAt([]any{"plots", i}, "plot %q: want one of %s", spec.Kind, strings.Join(s.plotKinds, ", "))
		}
		if err := s.checkFixed(spec); err != nil {
			// A warning, not a refusal: --set matrix=... may sweep other
			// keys than a preset's figures fix.
			s.whole = append(s.whole, s.errAt([]any{"plots", i}, "plot %q draws nothing: %v", p, err).Error())
		}
	}
	return nil
}

// decodeSettings decodes settings:, each honoured by some built-in
// protocol of the scenario.
func (s *Scenario) decodeSettings() error {
	settings, set, err := proto.DecodeSettings(s.file, &s.Settings)
	if err != nil {
		return err
	}
	for _, name := range set {
		if err := proto.CheckOptions([]string{name}, s.BuiltInProtocols()); err != nil {
			return strictyaml.ErrorAt(s.file, &s.Settings, name, "%v", err)
		}
	}
	s.settings = settings
	return nil
}

// MaxCells bounds the cells of one scenario: profiles x the matrix's
// lists x protocols x repetitions. A cell runs for seconds at least, so
// 100 000 cells is days of running; a few hundred bytes of YAML can ask
// for millions (eight lists of eight values make 16.7 M), and building
// them would exhaust memory before the first ran.
const MaxCells = 100_000

// checkCellCount refuses a scenario of more than MaxCells cells before
// any is built, naming the product that makes them.
func (s *Scenario) checkCellCount() error {
	factors := []struct {
		n    int
		what string
	}{{len(s.Profiles), "profiles"}, {len(s.Protocols), "protocols"}, {s.Repetitions, "repetitions"}}
	keys, vals := s.matrix()
	for i, k := range keys {
		factors = append(factors, struct {
			n    int
			what string
		}{len(vals[i]), k})
	}
	n, over := int64(1), false
	var parts []string
	for _, f := range factors {
		parts = append(parts, fmt.Sprintf("%d %s", f.n, f.what))
		if f.n > 0 && n > math.MaxInt64/int64(f.n) {
			over = true // n stays as it was: the product does not fit
		} else {
			n *= int64(f.n)
		}
	}
	if over || n > MaxCells {
		how := strconv.FormatInt(n, 10)
		if over {
			how = "more than " + strconv.FormatInt(math.MaxInt64, 10)
		}
		return s.errAt([]any{"matrix"}, "%s make %s cells; a scenario may have at most %d (split it, or sweep fewer values)", strings.Join(parts, " x "), how, MaxCells)
	}
	return nil
}

// LinkFor resolves a profile stack with the scenario's link overrides. A
// network a site provides (Sites) is its own: the overrides alone, over a
// perfect link, are what tlab emulates in front of it ("the real path,
// plus 1 % loss"); without overrides nothing is added and the config is
// empty. One of the scenario's profiles was resolved when it was read.
func (s *Scenario) LinkFor(profile string) (emu.LinkConfig, error) {
	if link, ok := s.links[profile]; ok {
		return link, nil
	}
	return s.resolveLink(profile)
}

// resolveLink resolves a profile stack with the link overrides.
func (s *Scenario) resolveLink(profile string) (emu.LinkConfig, error) {
	atomic.AddInt64(&s.resolved, 1)
	var ov *yaml.Node
	if s.Link.Kind != 0 {
		ov = &s.Link
	}
	stack := profile
	if _, ok := s.Sites[profile]; ok {
		stack = ""
	}
	link, _, err := emu.ResolveLinkIn(stack, ov, s.file)
	return link, err
}

// LinkOverrides says, in the scenario's own words, what its link:
// overrides and the matrix's sweeps of link fields set ("" when
// nothing): on a site's network, what tlab emulated in front of it.
func (s *Scenario) LinkOverrides() string {
	var parts []string
	if s.Link.Kind == yaml.MappingNode && len(s.Link.Content) > 0 {
		n := clone(&s.Link)
		setFlow(n)
		if b, err := yaml.Marshal(n); err == nil {
			parts = append(parts, "link: "+strings.TrimSpace(string(b)))
		}
	}
	keys, vals := s.matrix()
	for i, k := range keys {
		if k == "link" || strings.HasPrefix(k, "link.") {
			var vs []string
			for _, v := range vals[i] {
				vs = append(vs, v.Value)
			}
			parts = append(parts, "swept "+k+" over "+strings.Join(vs, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// setFlow renders n and its children in YAML's flow style, on one line.
func setFlow(n *yaml.Node) {
	n.Style |= yaml.FlowStyle
	for _, c := range n.Content {
		setFlow(c)
	}
}

// ProtoSettings returns the protocol settings: tlab's defaults where the
// scenario is silent.
func (s *Scenario) ProtoSettings() proto.Settings { return s.settings }

// decodeWorkload has the workload's type decode its section.
func (s *Scenario) decodeWorkload() error {
	w, err := s.WorkloadAt([]any{"workload"}, &s.Workload)
	if err != nil {
		return err
	}
	s.workload = w
	s.plotKinds = w.Info().Plots
	// Any workload that draws its delay over time can have cross traffic
	// beside it, and the plot of the two.
	if slices.Contains(s.plotKinds, "timeseries") {
		s.plotKinds = append(slices.Clone(s.plotKinds), LoadPlot)
	}
	return nil
}

// WorkloadAt decodes a workload section at path (a type and its
// parameters), with the scenario's duration, count and warm-up: the
// workload: section, or another's (a beside: entry's).
func (s *Scenario) WorkloadAt(path []any, node *yaml.Node) (workload.Workload, error) {
	if node.Kind == 0 {
		node = &yaml.Node{Kind: yaml.MappingNode, Line: 1}
	}
	if node.Kind != yaml.MappingNode {
		return nil, s.errAt(path, "workload: want a mapping with a type (%s) and its parameters", strings.Join(workload.Names(), ", "))
	}
	typeName := "periodic"
	params := &yaml.Node{Kind: yaml.MappingNode, Line: node.Line}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == "type" {
			typeName = node.Content[i+1].Value
			continue
		}
		params.Content = append(params.Content, node.Content[i], node.Content[i+1])
	}
	t, err := workload.Lookup(typeName)
	if err != nil {
		return nil, s.errAt(append(slices.Clone(path), "type"), "%v", err)
	}
	w, err := t.Decode(s.file, params, workload.Common{Duration: s.Duration.D(), Count: s.Count, Warmup: s.Warmup.D()})
	if err != nil {
		var se *strictyaml.Error
		if errors.As(err, &se) {
			if se.Line == 0 && params.Line > 0 {
				se.Line = params.Line
			}
			return nil, se
		}
		return nil, s.errAt(path, "workload: %v", err)
	}
	return w, nil
}

// Warnings are what validation accepted but a user should know, each
// naming its file and line.
func (s *Scenario) Warnings() []string { return s.warnings }

// PointWarnings gathers the warnings of matrix points' scenarios (as
// Expand gives them), each once, in the points' order.
func PointWarnings(points []*Scenario) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range points {
		for _, w := range p.Warnings() {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// overloadFactor is how far a workload's payload may exceed a link's rate
// before the scenario is refused: beyond it no message is answered in
// time and the cell measures the queue, not the stack. Up to it an
// overload is an experiment (study E's frames on LTE offer 3.6 times the
// uplink).
const overloadFactor = 10

// traceRates are trace files' mean rates, by file, each read once for a
// scenario and its cells.
type traceRates struct {
	mu    sync.Mutex
	rates map[string]float64
	reads int
}

// rate is a trace file's mean rate in bit/s (0 when it cannot be read:
// the link's resolution reports that).
func (t *traceRates) rate(file string) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.rates[file]; ok {
		return r
	}
	t.reads++
	r := 0.0
	if ops, err := emu.LoadTrace(file); err == nil {
		r = emu.TraceMeanRate(ops)
	}
	if t.rates == nil {
		t.rates = map[string]float64{}
	}
	t.rates[file] = r
	return r
}

// checkOffered refuses a workload whose payload rate is far beyond what a
// profile's link (links, in the order of Profiles) carries, naming the
// parameter that sets it.
func (s *Scenario) checkOffered(links []emu.LinkConfig) error {
	off := s.workload.Info().Offered
	for i, p := range s.Profiles {
		link := links[i]
		for _, d := range []struct {
			way     string
			offered float64
			param   string
			rate    float64
			message int
			dir     emu.DirectionConfig
		}{{"up", off.UpBps, off.UpParam, s.linkRate(link.Up), off.UpMessage, link.Up}, {"down", off.DownBps, off.DownParam, s.linkRate(link.Down), off.DownMessage, link.Down}} {
			path := []any{"workload"}
			if nodeAt(s.root, []any{"workload", d.param}) != nil {
				path = append(path, d.param)
			}
			if frames, room := messageFrames(d.message), queueFrames(d.dir, d.rate, link.BaseRTT()); room > 0 && frames > room {
				s.warnings = append(s.warnings, s.errAt(path, "one message of %s is %d full frames, and profile %s's %s queue holds %d: a sender that puts it on the link at once (a datagram transport) loses the rest; senders that pace (TCP, QUIC) do not",
					units.Size(d.message), frames, p, d.way, room).Error())
			}
			if d.rate <= 0 || d.offered <= d.rate {
				continue
			}
			if d.offered <= overloadFactor*d.rate {
				s.warnings = append(s.warnings, s.errAt(path, "the workload offers %s %s, %.1f times what profile %s carries %s (%s): an overload experiment, whose delays the queue sets more than the stack",
					units.Bitrate(d.offered), d.way, d.offered/d.rate, p, d.way, units.Bitrate(d.rate)).Error())
				continue
			}
			return s.errAt(path, "the workload offers %s %s, %.0f times what profile %s carries %s (%s): no message would be answered in time; shrink workload.%s, send less often, or choose a faster profile",
				units.Bitrate(d.offered), d.way, d.offered/d.rate, p, d.way, units.Bitrate(d.rate), d.param)
		}
	}
	return nil
}

// messageFrames is how many full Ethernet frames a message of n bytes
// takes (1448 bytes of payload each, as a TCP segment with timestamps at
// a 1500-byte MTU; a UDP fragment carries a little more).
func messageFrames(n int) int { return (n + 1447) / 1448 }

// queueFrames is how many full frames a direction's drop-tail queue holds
// (0: no bound known here, as for an AQM's own default).
func queueFrames(d emu.DirectionConfig, rateBps float64, baseRTT time.Duration) int {
	if d.Queue.Type != "" && d.Queue.Type != "droptail" {
		return 0
	}
	// The engine holds both bounds at once (emu.NewDirection): the room
	// is the tighter of the packets and the bytes in full frames.
	room := d.QueuePackets
	if bytes := d.QueueLimitBytes(rateBps, baseRTT); bytes > 0 {
		if frames := int(bytes / emu.MaxFrame); room == 0 || frames < room {
			room = frames
		}
	}
	return room
}

// linkRate is a direction's rate in bit/s (a trace's mean; 0: unlimited).
func (s *Scenario) linkRate(d emu.DirectionConfig) float64 {
	if d.Trace != "" {
		return s.traces.rate(d.Trace)
	}
	return d.Rate.BitsPerSecond()
}

// LoadPlot is the plot kind of a cell's delay beside its cross traffic
// (package report's load_timeseries).
const LoadPlot = "load_timeseries"

// WorkloadSpec returns the scenario's configured workload.
func (s *Scenario) WorkloadSpec() workload.Workload { return s.workload }

// TopologySpec returns the scenario's topology.
func (s *Scenario) TopologySpec() Topology { return s.topology }

// PlotsOrDefault returns the plots the scenario asked for, or every plot
// its workload offers.
func (s *Scenario) PlotsOrDefault() []string {
	if len(s.Plots) > 0 {
		return s.Plots
	}
	return s.plotKinds
}

// File is where the scenario was read from.
func (s *Scenario) File() string { return s.file }

// YAML returns the scenario's resolved YAML (overrides applied).
func (s *Scenario) YAML() ([]byte, error) { return strictyaml.Encode(s.root) }

// Cell is one run of the experiment: a profile, a protocol, one value of
// each matrix key and a repetition.
type Cell struct {
	Index   int
	ID      string
	Profile string
	// Site is the kind of site the cell runs at ("" for the emulated
	// testbed), from the scenario's sites.
	Site     string
	Protocol string
	Rep      int
	Params   []results.Param
	// Point numbers the cell's matrix point: its scenario, matrix values
	// applied, is Expand's points[Point] (the cell holds no pointer back
	// to it; plan.Compile reads it there).
	Point int
	// Seed is the emulator seed of the cell: the scenario's seed for the
	// first repetition, and one derived from it and the repetition for
	// the others (RepetitionSeed). Every protocol of a repetition meets
	// the same loss and jitter pattern (a fair comparison); each
	// repetition meets another (so that repetitions sample the link, not
	// only the host's timing).
	Seed uint64
}

// RepetitionSeed derives repetition rep's seed from the scenario's.
func RepetitionSeed(seed uint64, rep int) uint64 {
	if rep <= 1 {
		return seed
	}
	// SplitMix64's finaliser: distinct, well-mixed seeds per repetition.
	z := seed + uint64(rep)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// matrix returns the matrix's keys and value lists in file order.
func (s *Scenario) matrix() ([]string, [][]*yaml.Node) {
	var keys []string
	var vals [][]*yaml.Node
	m := &s.Matrix
	for i := 0; i+1 < len(m.Content); i += 2 {
		keys = append(keys, m.Content[i].Value)
		vals = append(vals, m.Content[i+1].Content)
	}
	return keys, vals
}

func (s *Scenario) validateMatrix() error {
	m := &s.Matrix
	if m.Kind == 0 {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		return s.errAt([]any{"matrix"}, "matrix: want a mapping from field paths to lists of values")
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Value == "matrix" || strings.HasPrefix(k.Value, "matrix.") || k.Value == "profiles" || k.Value == "protocols" {
			return &strictyaml.Error{File: s.file, Line: k.Line, Msg: fmt.Sprintf("matrix key %q: profiles and protocols are swept by their own lists", k.Value)}
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return &strictyaml.Error{File: s.file, Line: v.Line, Msg: fmt.Sprintf("matrix %s: want a non-empty list of values", k.Value)}
		}
		// Every value must make a valid scenario on its own.
		for _, val := range v.Content {
			if _, err := s.with([]string{k.Value}, []*yaml.Node{val}); err != nil {
				return err
			}
		}
	}
	return nil
}

// with returns a copy of the scenario with the given paths set.
func (s *Scenario) with(keys []string, vals []*yaml.Node) (*Scenario, error) {
	root := clone(s.root)
	for i, k := range keys {
		if err := setPath(root, strings.Split(k, "."), clone(vals[i])); err != nil {
			return nil, &strictyaml.Error{File: s.file, Line: vals[i].Line, Msg: fmt.Sprintf("matrix %s: %v", k, err)}
		}
	}
	// Remove the matrix (and the sections of the whole, as a range to
	// explore) from the copy: a cell is one point.
	removeKey(root, "matrix")
	for name, sec := range sections {
		if sec.Whole {
			removeKey(root, name)
		}
	}
	return decode(s.file, root, true, s.traces)
}

// Cells expands the matrix, profiles, protocols and repetitions into the
// cells to run, in the scenario's order.
func (s *Scenario) Cells() ([]Cell, error) {
	cells, _, err := s.Expand()
	return cells, err
}

// Expand is Cells with the scenarios of the matrix's points: cell c's,
// matrix values applied, is points[c.Point] (the cells of a point share
// it on every profile).
func (s *Scenario) Expand() (cells []Cell, points []*Scenario, err error) {
	if err := s.checkCellCount(); err != nil {
		return nil, nil, err
	}
	keys, vals := s.matrix()
	combos := [][]*yaml.Node{{}}
	for _, vs := range vals {
		var next [][]*yaml.Node
		for _, c := range combos {
			for _, v := range vs {
				next = append(next, append(slices.Clone(c), v))
			}
		}
		combos = next
	}
	// Each matrix point's scenario is decoded once, and its cells share
	// it on every profile: its links are resolved there, once.
	points = make([]*Scenario, len(combos))
	params := make([][]results.Param, len(combos))
	for c, combo := range combos {
		inst, err := s.with(keys, combo)
		if err != nil {
			return nil, nil, err
		}
		inst.warnings = append(inst.warnings, s.whole...)
		points[c] = inst
		for i, k := range keys {
			params[c] = append(params[c], results.Param{Key: k, Value: combo[i].Value})
		}
	}
	for _, profile := range s.Profiles {
		for c := range combos {
			inst, params := points[c], params[c]
			for _, protocol := range s.Protocols {
				for rep := 1; rep <= s.Repetitions; rep++ {
					cells = append(cells, Cell{Profile: profile, Site: s.Sites[profile], Protocol: protocol, Rep: rep, Params: params,
						Point: c, Seed: RepetitionSeed(inst.Seed, rep)})
				}
			}
		}
	}
	if s.Order == "random" {
		r := rand.New(rand.NewPCG(s.Seed, 0x6f72646572))
		r.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
	}
	for i := range cells {
		c := &cells[i]
		c.Index = i
		parts := []string{fmt.Sprintf("c%04d", i+1), c.Profile, c.Protocol}
		for _, p := range c.Params {
			parts = append(parts, p.Key[strings.LastIndex(p.Key, ".")+1:]+"="+p.Value)
		}
		parts = append(parts, "r"+strconv.Itoa(c.Rep))
		c.ID = results.SafeName(strings.Join(parts, "_"))
	}
	return cells, points, nil
}
