// Package stacks owns a scenario's stacks: section: the scenario's own
// stacks, given as commands (a server's and a client's command lines,
// templates with {placeholders}, and the format of the events its client
// reports). It registers the section (scenario.RegisterSection) with the
// protocol names it provides, so that the scenario accepts them in
// protocols: without the protocol registry, decodes and checks it, and
// reads it back (Command, Lines, Any).
package stacks

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/proto"
	"tlab/internal/scenario"
	"tlab/internal/strictyaml"
	"tlab/internal/workload"
)

func init() {
	scenario.RegisterSection(scenario.Section{Name: "stacks", Decode: decodeSection, Protocols: provided})
}

// Spec is one of a scenario's own stacks (a stacks: entry).
type Spec struct {
	Server string `yaml:"server"`
	Client string `yaml:"client"`
	Events string `yaml:"events"`
}

// provided are the stacks' names: the protocols the section gives the
// scenario, read from its node (strictly: a section of another shape is
// refused at its line) before the scenario checks its protocols.
func provided(file string, node *yaml.Node) ([]string, error) {
	var stacks map[string]Spec
	if err := strictyaml.Decode(file, node, &stacks); err != nil {
		return nil, err
	}
	return sortedNames(stacks), nil
}

// decodeSection checks stacks: each named apart from the built-in
// protocols, with a client, a known events format and templates that use
// only placeholders the workload gives, and listed in protocols.
func decodeSection(s *scenario.Scenario, node *yaml.Node) (any, error) {
	var stacks map[string]Spec
	if err := strictyaml.Decode(s.File(), node, &stacks); err != nil {
		return nil, err
	}
	params := s.WorkloadParams()
	for _, n := range sortedNames(stacks) {
		st := stacks[n]
		at := func(field string) []any {
			if s.Has("stacks", n, field) {
				return []any{"stacks", n, field}
			}
			return []any{"stacks", n}
		}
		if _, err := proto.Lookup(n); err == nil {
			return nil, s.ErrorAt([]any{"stacks", n}, "stack %q: a built-in protocol has that name; give yours another", n)
		}
		if strings.TrimSpace(st.Client) == "" {
			return nil, s.ErrorAt(at("client"), "stack %s: give its client command (it runs the workload and reports its events)", n)
		}
		if st.Events != "" && !slices.Contains(workload.EventFormats(), st.Events) {
			return nil, s.ErrorAt(at("events"), "stack %s: events %q: want one of %s", n, st.Events, strings.Join(workload.EventFormats(), ", "))
		}
		for _, f := range []struct{ field, tmpl string }{{"server", st.Server}, {"client", st.Client}} {
			if err := workload.CheckTemplate(f.tmpl, params); err != nil {
				return nil, s.ErrorAt(at(f.field), "stack %s's %s: %v", n, f.field, err)
			}
		}
		if !slices.Contains(s.Protocols, n) {
			return nil, s.ErrorAt([]any{"stacks", n}, "stack %s is not one of the protocols (%s): list it there to run it", n, strings.Join(s.Protocols, ", "))
		}
	}
	return stacks, nil
}

func sortedNames(stacks map[string]Spec) []string {
	names := make([]string, 0, len(stacks))
	for n := range stacks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func of(s *scenario.Scenario) map[string]Spec {
	stacks, _ := scenario.Value[map[string]Spec](s, "stacks")
	return stacks
}

// Any says whether the scenario has stacks of its own: commands that
// would run on this machine.
func Any(s *scenario.Scenario) bool { return len(of(s)) > 0 }

// Names are the scenario's own stacks' names, sorted.
func Names(s *scenario.Scenario) []string { return sortedNames(of(s)) }

// Command is the scenario's own stack of that name, if it is one.
func Command(s *scenario.Scenario, name string) (workload.CommandStack, bool) {
	st, ok := of(s)[name]
	if !ok {
		return workload.CommandStack{}, false
	}
	return workload.CommandStack{Name: name, Server: st.Server, Client: st.Client, Events: st.Events}, true
}

// describe is a stack's commands, for tlab validate.
func (st Spec) describe() string {
	events := st.Events
	if events == "" {
		events = workload.EventsJSONL
	}
	server := st.Server
	if strings.TrimSpace(server) == "" {
		server = "(none)"
	}
	return fmt.Sprintf("server: %s; client: %s; events: %s", server, st.Client, events)
}

// Lines describe the scenario's own stacks, one line each.
func Lines(s *scenario.Scenario) []string {
	stacks := of(s)
	var out []string
	for _, n := range sortedNames(stacks) {
		out = append(out, fmt.Sprintf("stack %s (the scenario's own, given as commands): %s", n, stacks[n].describe()))
	}
	return out
}
