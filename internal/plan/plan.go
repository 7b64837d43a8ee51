// Package plan compiles a scenario's cells into values: each cell's
// links resolved (once, with its matrix point), its workload decoded (a
// command stack's wrapped around it), its roles placed on the topology's
// hosts and the sections' values read (cross traffic, the workloads
// beside it), with no pointer back to the scenario. A cell spec is built
// from a compiled cell alone (experiment.SpecOf).
package plan

import (
	"fmt"
	"maps"
	"slices"

	"tlab/internal/beside"
	"tlab/internal/cross"
	"tlab/internal/emu"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/stacks"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// Cell is one compiled cell: what runs, where and with what, as values.
type Cell struct {
	// Index, ID, Profile, Site, Protocol, Rep and Params are the
	// scenario cell's; Seed its repetition's seed.
	Index    int
	ID       string
	Profile  string
	Site     string
	Protocol string
	Rep      int
	Params   []results.Param
	Seed     uint64
	// Scenario is the scenario's name (for labels), Capture whether it
	// captures packets.
	Scenario string
	Capture  bool
	// Topology is the testbed with the cell's links resolved; Roles maps
	// each of the workload's roles to a host, Groups lists every host of
	// a role several hosts play.
	Topology testbed.Topology
	Roles    map[string]string
	Groups   map[string][]string
	// Workload is the cell's workload: the scenario's, or, when the
	// protocol is one of the scenario's own stacks, its commands running
	// the workload's traffic.
	Workload       workload.Workload
	Settings       proto.Settings
	Emulator       emu.EngineOptions
	RemoveOutliers bool
	Cross          cross.Config
	Beside         []beside.Flow
	// Warnings are what validation accepted of the cell's matrix point
	// but a user should know.
	Warnings []string
	// pointSeed is the point's seed, from which a repetition's is made
	// (Repeat).
	pointSeed uint64
}

// Compile compiles every cell of a scenario, in its order.
func Compile(s *scenario.Scenario) ([]Cell, error) {
	cells, points, err := s.Expand()
	if err != nil {
		return nil, err
	}
	out := make([]Cell, len(cells))
	placed := make([]*placement, len(points)) // each point's roles, placed once
	for i, c := range cells {
		if placed[c.Point] == nil {
			if placed[c.Point], err = place(points[c.Point]); err != nil {
				return nil, fmt.Errorf("cell %s: %w", c.ID, err)
			}
		}
		if out[i], err = compileCell(points[c.Point], c, placed[c.Point]); err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.ID, err)
		}
	}
	return out, nil
}

// placement is where a point's workload roles play: the first host of
// each, and every host of a role several play. A command stack runs the
// workload's roles, so it is the same for every protocol of the point.
type placement struct {
	roles  map[string]string
	groups map[string][]string
}

func place(s *scenario.Scenario) (*placement, error) {
	p := &placement{roles: map[string]string{}, groups: map[string][]string{}}
	for _, r := range s.WorkloadSpec().Info().Roles {
		hosts, err := s.TopologySpec().HostsFor(r)
		if err != nil {
			return nil, err
		}
		p.groups[r], p.roles[r] = hosts, hosts[0]
	}
	return p, nil
}

// CompileAt compiles the cell of one point given by its fields' values,
// for a profile, a protocol and a repetition (scenario.CellAt): a point
// an exploration chose.
func CompileAt(s *scenario.Scenario, profile, protocol string, rep int, params []results.Param) (Cell, error) {
	c, point, err := s.CellAt(profile, protocol, rep, params)
	if err != nil {
		return Cell{}, err
	}
	return CompileCell(point, c)
}

// Warnings gathers the cells' warnings, each once, in the cells' order.
func Warnings(cells []Cell) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cells {
		for _, w := range c.Warnings {
			if !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// Repeat is the cell's repetition rep at the same point (named id): its
// seed is that repetition's, also in a command stack's workload.
func (c Cell) Repeat(rep int, id string) Cell {
	c.Rep, c.ID, c.Seed = rep, id, scenario.RepetitionSeed(c.pointSeed, rep)
	if w, ok := c.Workload.(workload.Command); ok {
		w.Seed = c.Seed
		c.Workload = w
	}
	return c
}

// CompileCell compiles one scenario cell, given its matrix point's
// scenario (scenario.Expand's points[c.Point], or CellAt's).
func CompileCell(s *scenario.Scenario, c scenario.Cell) (Cell, error) {
	p, err := place(s)
	if err != nil {
		return Cell{}, err
	}
	return compileCell(s, c, p)
}

// compileCell compiles a cell whose point's roles are placed: each cell
// gets maps of its own.
func compileCell(s *scenario.Scenario, c scenario.Cell, p *placement) (Cell, error) {
	topo, err := s.TestbedTopology(c.Profile)
	if err != nil {
		return Cell{}, err
	}
	w := s.WorkloadSpec()
	if own, ok := stacks.Command(s, c.Protocol); ok {
		// The scenario's own stack, given as commands: its client makes
		// the workload's traffic, and the workload's metrics measure it.
		w = workload.Command{Base: w, Stack: own, Params: s.WorkloadParams(), Seed: c.Seed,
			Common: workload.Common{Duration: s.Duration.D(), Count: s.Count, Warmup: s.Warmup.D()}}
	}
	roles, groups := maps.Clone(p.roles), map[string][]string{}
	for r, hosts := range p.groups {
		groups[r] = slices.Clone(hosts)
	}
	return Cell{
		Index: c.Index, ID: c.ID, Profile: c.Profile, Site: c.Site, Protocol: c.Protocol, Rep: c.Rep, Params: c.Params, Seed: c.Seed,
		Scenario: s.Name, Capture: s.Capture,
		Topology: topo, Roles: roles, Groups: groups, Workload: w, Settings: s.ProtoSettings(),
		Emulator: s.Emulator, RemoveOutliers: s.Metrics.RemoveOutliers,
		Cross: cross.Of(s), Beside: beside.Of(s),
		Warnings: s.Warnings(), pointSeed: s.Seed,
	}, nil
}
