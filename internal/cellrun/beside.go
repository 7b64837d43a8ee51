package cellrun

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
	"sync"
	"time"

	"tlab/internal/beside"
	"tlab/internal/cross"
	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/workload"
)

// A Beside is traffic that runs beside a cell's workload at its site: it
// starts its lead before the workload (a load that builds its queue
// first) or with it, runs through the measured window and stops after the
// workload; what it measured comes back as the
// cell's columns, by name. What runs beside is data: the scenario's cross:
// section (bulk and constant-rate flows, package cross) and its beside:
// section (any registered workload over any registered stack). A new kind
// is one type with these three methods, chosen in besides.
type Beside interface {
	// Lead is how long it runs alone before the workload starts.
	Lead() time.Duration
	// Start begins it at the cell's place, with the cell's settings (the
	// run's certificates among them).
	Start(ctx context.Context, place *Place, settings proto.Settings) error
	// Stop ends it and returns its columns by name, in Columns' order.
	Stop() (map[string]float64, error)
	// Columns are the names of the columns Stop returns.
	Columns() []string
	// Failed says why it failed on the network's or a peer's terms (its
	// broker down, its connection lost), or "": the cell is marked failed
	// with it, since its workload did not run beside what was asked.
	Failed() string
}

// besides are what the cell's spec puts beside its workload.
func Besides(spec CellSpec) []Beside {
	var out []Beside
	if spec.Cross.Active() {
		out = append(out, &crossBeside{cfg: spec.Cross, near: spec.Cross.Near, log: spec.CrossLog})
	}
	for i, f := range spec.Beside {
		out = append(out, &workloadBeside{flow: f, offset: besidePortOffset * (i + 1), dir: spec.BesideDir})
	}
	return out
}

// besideGroup is a cell's besides: those with a lead start at once, the
// others with the workload (waitForWorkload), so that a workload beside
// the cell's runs in step with it rather than a load's lead ahead.
type besideGroup struct {
	started []Beside
	pending []Beside
	lead    time.Duration
	begun   time.Time
	stopped bool
	// what the pending besides start with
	place    *Place
	settings proto.Settings
}

// startBeside starts the cell's besides at place; none runs when one
// cannot start.
func startBeside(ctx context.Context, spec CellSpec, info workload.Info, place *Place, settings proto.Settings) (*besideGroup, error) {
	bs := Besides(spec)
	for _, b := range bs {
		if c, ok := b.(*crossBeside); ok && c.near == "" {
			c.near = info.Roles[0] // the workload's first role: the client, the publisher, the sender
		}
	}
	return StartBesides(ctx, bs, place, settings)
}

// startBesides starts those of bs that have a lead and keeps the others
// for waitForWorkload.
func StartBesides(ctx context.Context, bs []Beside, place *Place, settings proto.Settings) (*besideGroup, error) {
	g := &besideGroup{begun: time.Now(), place: place, settings: settings}
	for _, b := range bs {
		if b.Lead() <= 0 {
			g.pending = append(g.pending, b)
			continue
		}
		if err := b.Start(ctx, place, settings); err != nil {
			g.abort()
			return nil, err
		}
		g.started = append(g.started, b)
		g.lead = max(g.lead, b.Lead())
	}
	return g, nil
}

// waitForWorkload waits out the besides' lead, then starts those that run
// with the workload: the workload starts when it returns.
func (g *besideGroup) WaitForWorkload(ctx context.Context) error {
	select {
	case <-time.After(time.Until(g.begun.Add(g.lead))):
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, b := range g.pending {
		if err := b.Start(ctx, g.place, g.settings); err != nil {
			return err
		}
		g.started = append(g.started, b)
	}
	g.pending = nil
	return nil
}

// stop ends every beside and returns their columns and failures.
func (g *besideGroup) Stop() (map[string]float64, []string, error) {
	g.stopped = true
	facts := map[string]float64{}
	var errs []error
	var failures []string
	for _, b := range g.started {
		f, err := b.Stop()
		maps.Copy(facts, f)
		errs = append(errs, err)
		if why := b.Failed(); why != "" {
			failures = append(failures, why)
		}
	}
	return facts, failures, errors.Join(errs...)
}

// abort stops what stop has not (an error path).
func (g *besideGroup) abort() {
	if g == nil || g.stopped {
		return
	}
	g.Stop() // an error path: the cell already has its error
}

// columns are every beside's column names, in order.
func (g *besideGroup) columns() []string {
	var out []string
	for _, b := range g.started {
		out = append(out, b.Columns()...)
	}
	return out
}

// crossBeside is a scenario's cross: section: bulk TCP or QUIC flows and a
// constant-rate UDP flow on the workload's bottleneck (package cross).
type crossBeside struct {
	cfg  cross.Config
	near string // the role whose host the load runs from
	log  string // cross.csv, when set
	run  *cross.Run
	file *os.File
}

func (c *crossBeside) Lead() time.Duration { return c.cfg.LeadTime() }
func (c *crossBeside) Failed() string      { return "" }
func (c *crossBeside) Columns() []string   { return cross.FactNames }

func (c *crossBeside) Start(ctx context.Context, place *Place, settings proto.Settings) error {
	if place.Beside == nil {
		return ErrNoBeside
	}
	ends, err := place.Beside(c.near)
	if err != nil {
		return err
	}
	var out io.Writer
	if c.log != "" {
		if c.file, err = results.Create(c.log); err != nil {
			return err
		}
		out = c.file
	}
	c.run, err = cross.Start(ctx, ends, c.cfg, settings, time.Now().Add(c.Lead()), out)
	if err != nil && c.file != nil {
		c.file.Close()
	}
	return err
}

func (c *crossBeside) Stop() (map[string]float64, error) {
	if c.run == nil {
		return nil, nil
	}
	flows, err := c.run.Close()
	c.run = nil
	if c.file != nil {
		if cerr := c.file.Close(); err == nil {
			err = cerr
		}
	}
	return cross.Facts(c.cfg, flows), err
}

// besidePortOffset separates the ports of the workloads beside a cell's
// from the cell's own (ServerPort, the brokers' ports) and from each
// other's: the i-th beside workload's are moved by i times this.
const besidePortOffset = 100

// workloadBeside runs a registered workload over a registered stack beside
// the cell's, on the same hosts (its ports moved), with its own ledger: its
// records go to the cell's beside-NAME.csv, and its metrics become the
// cell's beside_NAME_* columns. It shares the link's counters with the
// cell's workload, so its bytes-on-the-wire metrics are not computed.
type workloadBeside struct {
	flow   beside.Flow
	offset int
	dir    string // the cell's directory: beside-NAME.csv goes there

	rec    *results.RecordWriter
	mu     sync.Mutex
	recs   []results.Record
	facts  map[string]float64
	failed string
	done   chan error
	cancel context.CancelFunc
}

func (w *workloadBeside) Lead() time.Duration { return 0 }

func (w *workloadBeside) Failed() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failed == "" {
		return ""
	}
	return fmt.Sprintf("beside %s (%s over %s): %s", w.flow.Name, w.flow.Workload.Info().Type, w.flow.Protocol, w.failed)
}

// prefix is the flow's column prefix.
func (w *workloadBeside) prefix() string { return "beside_" + w.flow.Name + "_" }

// Columns are the flow's workload's metrics, prefixed, and its failure.
func (w *workloadBeside) Columns() []string {
	var out []string
	for _, name := range w.flow.Workload.Info().Metrics {
		if m, ok := metrics.Lookup(name); ok && m.Kind == metrics.Measured {
			out = append(out, w.prefix()+name)
		}
	}
	return out
}

func (w *workloadBeside) Start(ctx context.Context, place *Place, settings proto.Settings) error {
	if place.Beside == nil {
		return ErrNoBeside
	}
	// It runs where the site's hosts offer a workload beside the cell's
	// on each of its roles (a tlab agent does not: it serves the cell's
	// own workload only).
	if err := workload.Require(place.Hosts, w.flow.Workload.Info().Roles, workload.RunBeside); err != nil {
		return fmt.Errorf("a workload beside yours (beside:) cannot run at this site: %w; cross: bulk flows load a path wherever the site serves them", err)
	}
	stack, err := proto.Lookup(w.flow.Protocol)
	if err != nil {
		return err
	}
	info := w.flow.Workload.Info()
	if w.dir != "" {
		cell := results.Cell{ID: "beside-" + w.flow.Name, Protocol: w.flow.Protocol, Workload: info.Type}
		if w.rec, err = results.CreateRecords(filepath.Join(w.dir, "beside-"+w.flow.Name+".csv"), cell, info.Columns); err != nil {
			return err
		}
	}
	w.facts = map[string]float64{}
	env := &workload.Env{Protocol: stack, Settings: settings, Hosts: place.Hosts, PortOffset: w.offset,
		Emit: func(r results.Record) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.recs = append(w.recs, r)
			if w.rec != nil {
				w.rec.Write(r)
			}
		},
		// The cell's own workload owns the measured window.
		StartWindow: func() {},
		Note: func(name string, v float64) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.facts[name] = v
		},
		Fail: func(reason string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.failed == "" {
				w.failed = reason
			}
		},
	}
	rctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	w.done = make(chan error, 1)
	go func() { w.done <- w.flow.Workload.Run(rctx, env) }()
	return nil
}

// Stop lets the beside workload finish its own pattern (it was given the
// cell's duration), then summarises it.
func (w *workloadBeside) Stop() (map[string]float64, error) {
	if w.done == nil {
		return nil, nil
	}
	runErr := <-w.done
	w.cancel()
	w.done = nil
	if w.rec != nil {
		if err := w.rec.Close(); err != nil && runErr == nil {
			runErr = err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var measured []results.Record
	for _, r := range w.recs {
		if !r.Warmup {
			measured = append(measured, r)
		}
	}
	slices.SortFunc(measured, func(a, b results.Record) int { return a.Seq - b.Seq })
	in := &metrics.Input{Records: measured, Facts: w.facts, NoLink: true}
	fields, err := metrics.Default.Compute(w.flow.Workload.Info().Metrics, in)
	if err != nil {
		return nil, fmt.Errorf("beside %s: %w", w.flow.Name, err)
	}
	out := map[string]float64{}
	for _, col := range w.Columns() {
		out[col] = math.NaN()
	}
	for _, f := range fields {
		if v, ok := f.Value.(float64); ok {
			if _, want := out[w.prefix()+f.Name]; want {
				out[w.prefix()+f.Name] = v
			}
		}
	}
	if runErr != nil {
		runErr = fmt.Errorf("beside %s (%s over %s): %w", w.flow.Name, w.flow.Workload.Info().Type, w.flow.Protocol, runErr)
	}
	return out, runErr
}
