package scenario

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"tlab/internal/emu"
	"tlab/internal/strictyaml"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// Topology is the scenario's hosts and links, as data. Three shapes:
//
//	topology: client-server            # hosts client and server, link "path"
//
//	topology:
//	  type: chain                      # hosts in a line; link "a-b" joins a and b
//	  hosts: [publisher, broker, subscriber]
//	  links: {broker-subscriber: ethernet}
//
//	topology:
//	  type: shared-access              # stations share one access link to a server
//	  stations: 3                      # hosts publisher1..3
//	  station: publisher
//	  server: broker
//	  then: [subscriber]               # hosts chained after the server
//	  links: {access: wifi+loss-ge-b}
//
//	topology:
//	  type: multi-homed                # a client on several access links to one server
//	  networks: [wifi, 5g]             # the links, by name; the first has the route at the start
//	  links: {wifi: wifi, 5g: 5g}
//	  handovers:                       # the client's route moves (testbed.Handover)
//	    - {at: 5s, from: wifi, to: 5g, outage: 1s}      # break before make
//	    - {at: 15s, from: 5g, to: wifi, overlap: 500ms} # make before break
//
// Links maps link names to profile stacks, fixed: a link without one gets
// the cell's profile (from the scenario's profiles list) and the link:
// overrides. Without a topology
// section a client-server workload gets client-server, any other a chain
// of its roles (pubsub: publisher, broker, subscriber); a chain without
// hosts is the same chain.
type Topology struct {
	Type     string            `yaml:"type"`
	Hosts    []string          `yaml:"hosts"`
	Stations int               `yaml:"stations"`
	Station  string            `yaml:"station"`
	Server   string            `yaml:"server"`
	Then     []string          `yaml:"then"`
	Links    map[string]string `yaml:"links"`
	// CPU limits a host's processes to that many cores (cgroup CPU
	// bandwidth, 100 ms period): cpu: {server: 1} is a 1-vCPU server;
	// cpu: {server@cloud: 1} limits it on the profile cloud alone.
	CPU map[string]float64 `yaml:"cpu"`
	// Networks names a multi-homed client's access links, each joining
	// it to the server; Handovers move its route between them.
	Networks  []string           `yaml:"networks"`
	Handovers []testbed.Handover `yaml:"handovers"`
}

// TopologyTypes are the shapes a scenario may name.
var TopologyTypes = []string{"client-server", "chain", "shared-access", "multi-homed"}

// StationsMeasured is the most stations of a shared access whose
// emulator error docs/methodology.md reports ("What a long study costs"):
// up to it the release error's p99.9 stayed at a third of a millisecond on
// a 2-vCPU machine; beyond it a scenario is accepted with a warning that
// gives the figures.
const StationsMeasured = 32

func (s *Scenario) decodeTopology() error {
	t := Topology{Type: "client-server"}
	n := &s.Topology
	switch {
	case n.Kind == 0:
		// No topology: client-server for a client-server workload,
		// else a chain of the workload's roles (publisher, broker,
		// subscriber).
		if roles := s.workload.Info().Roles; !slices.Equal(roles, []string{"client", "server"}) && len(roles) >= 2 {
			t.Type, t.Hosts = "chain", slices.Clone(roles)
		}
	case n.Kind == yaml.ScalarNode:
		t.Type = n.Value
	default:
		if err := strictyaml.Decode(s.file, n, &t); err != nil {
			return err
		}
	}
	at := func(key, format string, args ...any) error {
		if n.Kind == yaml.MappingNode {
			return strictyaml.ErrorAt(s.file, n, key, format, args...)
		}
		return s.errAt([]any{"topology"}, format, args...)
	}
	switch t.Type {
	case "client-server":
		t.Hosts = []string{"client", "server"}
	case "chain":
		if len(t.Hosts) == 0 {
			t.Hosts = slices.Clone(s.workload.Info().Roles)
		}
		if len(t.Hosts) < 2 {
			return at("hosts", "topology: a chain needs at least two hosts, such as [publisher, broker, subscriber]")
		}
	case "shared-access":
		if t.Stations < 1 || t.Stations > testbed.MaxHostsPerLink-1 {
			return at("stations", "topology: stations %d: want 1 to %d", t.Stations, testbed.MaxHostsPerLink-1)
		}
		if t.Stations > StationsMeasured {
			path := []any{"topology", "stations"}
			if nodeAt(s.root, path) == nil {
				path = []any{"topology"}
			}
			s.warnings = append(s.warnings, s.errAt(path, "topology: stations %d: beyond the %d whose emulator error tlab measured; it grows with the stations (release error p99.9 0.32 ms at 32 and 0.94 ms at 64, worst 3.2 ms, on a 2-vCPU machine: docs/methodology.md), so read each cell's emu_release_p999_us beside its delays",
				t.Stations, StationsMeasured).Error())
		}
		if t.Station == "" {
			t.Station = "client"
		}
		if t.Server == "" {
			t.Server = "server"
		}
		t.Hosts = nil
		for i := 1; i <= t.Stations; i++ {
			t.Hosts = append(t.Hosts, t.Station+strconv.Itoa(i))
		}
		t.Hosts = append(append(t.Hosts, t.Server), t.Then...)
	case "multi-homed":
		if len(t.Networks) < 2 {
			return at("networks", "topology: a multi-homed client needs two networks or more, such as [wifi, 5g]")
		}
		t.Hosts = []string{"client", "server"}
	default:
		return at("type", "topology %q: want one of %s", t.Type, strings.Join(TopologyTypes, ", "))
	}
	if t.Type != "multi-homed" && (len(t.Networks) > 0 || len(t.Handovers) > 0) {
		return at("type", "topology: networks and handovers belong to a multi-homed topology, not %s", t.Type)
	}
	s.topology = t
	// Build once with a placeholder profile: names, links and the
	// workload's roles are checked before any cell runs.
	topo, err := s.topology.build(func(string) (emu.LinkConfig, error) { return emu.LinkConfig{}, nil })
	if err != nil {
		return at("", "topology: %v", err)
	}
	if topo.CPU, err = s.topology.cpuOn(everyProfile); err != nil {
		return at("cpu", "topology: %v", err)
	}
	if err := topo.Validate(); err != nil {
		return at("", "%v", err)
	}
	var names []string
	for _, l := range topo.Links {
		names = append(names, l.Name)
	}
	s.fixed = map[string]emu.LinkConfig{}
	for name, profile := range t.Links {
		if !slices.Contains(names, name) {
			return at("links", "topology: no link %q; the links are %s", name, strings.Join(names, ", "))
		}
		atomic.AddInt64(&s.resolved, 1)
		cfg, _, err := emu.ResolveLink(profile, nil)
		if err != nil {
			return at("links", "topology link %s: %v", name, err)
		}
		s.fixed[name] = cfg
	}
	if t.Type == "multi-homed" {
		// A handover takes a link down through its loss: a fixed
		// link's model is known now.
		fixed, err := s.topology.build(func(link string) (emu.LinkConfig, error) { return s.fixed[link], nil })
		if err == nil {
			err = fixed.Validate()
		}
		if err != nil {
			return at("links", "%v", err)
		}
	}
	for _, role := range s.workload.Info().Roles {
		if _, err := s.topology.HostFor(role); err != nil {
			return at("", "workload %s: %v", s.workload.Info().Type, err)
		}
	}
	s.warnInProcessLimits()
	return nil
}

// warnInProcessLimits warns of a CPU-limited host whose role's work runs
// in tlab's own process, where the limit cannot reach it.
func (s *Scenario) warnInProcessLimits() {
	outside := workload.OutOfProcessRoles(s.workload)
	for _, role := range s.workload.Info().Roles {
		host, err := s.topology.HostFor(role)
		if err != nil || !s.topology.limitedHost(host) || slices.Contains(outside, role) {
			continue
		}
		path := []any{"topology", "cpu", host}
		if nodeAt(s.root, path) == nil {
			path = []any{"topology"}
		}
		s.warnings = append(s.warnings, s.errAt(path, "topology: cpu %s: the host plays %s, whose work (workload %s) runs in tlab's own process, which the limit does not hold; it holds only the processes a host runs (a workload's servers, a command's programs)",
			host, role, s.workload.Info().Type).Error())
	}
}

// HostFor returns the host that plays role: the host of that name, or the
// first station when role is the stations' name.
func (t Topology) HostFor(role string) (string, error) {
	if slices.Contains(t.Hosts, role) {
		return role, nil
	}
	if t.Type == "shared-access" && role == t.Station {
		return t.Station + "1", nil
	}
	return "", fmt.Errorf("needs a host %q; the topology has %s", role, strings.Join(t.Hosts, ", "))
}

// HostsFor returns every host that plays role: all the stations for a
// shared access's station role, else the one host of HostFor.
func (t Topology) HostsFor(role string) ([]string, error) {
	if t.Type == "shared-access" && role == t.Station {
		return slices.Clone(t.Hosts[:t.Stations]), nil
	}
	h, err := t.HostFor(role)
	if err != nil {
		return nil, err
	}
	return []string{h}, nil
}

// build makes the testbed topology, resolving each link's profile with
// linkFor.
func (t Topology) build(linkFor func(link string) (emu.LinkConfig, error)) (testbed.Topology, error) {
	var topo testbed.Topology
	var err error
	switch t.Type {
	case "client-server":
		var cfg emu.LinkConfig
		if cfg, err = linkFor("path"); err != nil {
			return topo, err
		}
		topo = testbed.ClientServer(cfg)
	case "chain":
		cfgs := make([]emu.LinkConfig, len(t.Hosts)-1)
		for i := range cfgs {
			if cfgs[i], err = linkFor(t.Hosts[i] + "-" + t.Hosts[i+1]); err != nil {
				return topo, err
			}
		}
		if topo, err = testbed.Chain(t.Hosts, cfgs); err != nil {
			return topo, err
		}
	case "shared-access":
		cfg, err := linkFor("access")
		if err != nil {
			return topo, err
		}
		stations := t.Hosts[:t.Stations]
		topo = testbed.SharedAccess(stations, t.Server, cfg)
		prev := t.Server
		for _, h := range t.Then {
			cfg, err := linkFor(prev + "-" + h)
			if err != nil {
				return topo, err
			}
			topo.Hosts = append(topo.Hosts, h)
			topo.Links = append(topo.Links, testbed.Link{Name: prev + "-" + h, A: []string{prev}, B: []string{h}, Config: cfg})
			prev = h
		}
	case "multi-homed":
		cfgs := make([]emu.LinkConfig, len(t.Networks))
		for i, name := range t.Networks {
			if cfgs[i], err = linkFor(name); err != nil {
				return topo, err
			}
		}
		if topo, err = testbed.MultiHomed(t.Hosts[0], t.Hosts[1], t.Networks, cfgs, t.Handovers); err != nil {
			return topo, err
		}
	}
	return topo, nil
}

// everyProfile asks cpuOn for every limit, whatever profile it is on
// (to check the hosts they name).
const everyProfile = ""

// cpuOn are the CPU limits of the hosts on profile: a key "host" limits
// the host on every profile, "host@profile" on that profile alone (study
// A's cloud server is a 1-vCPU task, its edge servers are not limited),
// and wins there over the host's own.
func (t Topology) cpuOn(profile string) (map[string]testbed.CPULimit, error) {
	var out map[string]testbed.CPULimit
	for _, qualified := range []bool{false, true} {
		for key, cpus := range t.CPU {
			host, on, hasProfile := strings.Cut(key, "@")
			if hasProfile != qualified {
				continue
			}
			if hasProfile && (host == "" || on == "") {
				return nil, fmt.Errorf("cpu %q: want HOST or HOST@PROFILE", key)
			}
			if hasProfile && profile != everyProfile && on != profile {
				continue
			}
			if out == nil {
				out = map[string]testbed.CPULimit{}
			}
			out[host] = testbed.LimitCPUs(cpus)
		}
	}
	return out, nil
}

// limitedHost tells whether the topology limits host's CPU on any
// profile.
func (t Topology) limitedHost(host string) bool {
	for key := range t.CPU {
		if h, _, _ := strings.Cut(key, "@"); h == host {
			return true
		}
	}
	return false
}

// TestbedTopology returns the cell's testbed: a link named in
// topology.links gets that profile as it is (a fixed link: neither the
// cell's profile nor the link: overrides and their sweeps touch it); every
// other link gets the cell's profile with the overrides.
func (s *Scenario) TestbedTopology(profile string) (testbed.Topology, error) {
	topo, err := s.topology.build(func(link string) (emu.LinkConfig, error) {
		if cfg, ok := s.fixed[link]; ok {
			return cfg, nil
		}
		if own, ok := s.topology.Links[link]; ok {
			atomic.AddInt64(&s.resolved, 1)
			cfg, _, err := emu.ResolveLink(own, nil)
			if err != nil {
				return cfg, fmt.Errorf("link %s: %w", link, err)
			}
			return cfg, nil
		}
		cfg, err := s.LinkFor(profile)
		if err != nil {
			return cfg, fmt.Errorf("link %s: %w", link, err)
		}
		return cfg, nil
	})
	if err != nil {
		return topo, err
	}
	topo.CPU, err = s.topology.cpuOn(profile)
	return topo, err
}
