package scenario

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/proto"
	"tlab/internal/workload"
)

// StackSpec is one of a scenario's own stacks, given as commands (a
// stacks: entry): the server's and the client's command lines, templates
// with {placeholders}, and the format of the events its client reports.
type StackSpec struct {
	Server string `yaml:"server"`
	Client string `yaml:"client"`
	Events string `yaml:"events"`
}

// validateStacks checks stacks: each named apart from the built-in
// protocols, with a client, a known events format and templates that use
// only placeholders the workload gives.
func (s *Scenario) validateStacks() error {
	names := make([]string, 0, len(s.Stacks))
	for n := range s.Stacks {
		names = append(names, n)
	}
	sort.Strings(names)
	params := s.WorkloadParams()
	for _, n := range names {
		st := s.Stacks[n]
		at := func(field string) []any {
			if nodeAt(s.root, []any{"stacks", n, field}) != nil {
				return []any{"stacks", n, field}
			}
			return []any{"stacks", n}
		}
		if _, err := proto.Lookup(n); err == nil {
			return s.errAt([]any{"stacks", n}, "stack %q: a built-in protocol has that name; give yours another", n)
		}
		if strings.TrimSpace(st.Client) == "" {
			return s.errAt(at("client"), "stack %s: give its client command (it runs the workload and reports its events)", n)
		}
		if st.Events != "" && !slices.Contains(workload.EventFormats(), st.Events) {
			return s.errAt(at("events"), "stack %s: events %q: want one of %s", n, st.Events, strings.Join(workload.EventFormats(), ", "))
		}
		for _, f := range []struct{ field, tmpl string }{{"server", st.Server}, {"client", st.Client}} {
			if err := workload.CheckTemplate(f.tmpl, params); err != nil {
				return s.errAt(at(f.field), "stack %s's %s: %v", n, f.field, err)
			}
		}
		if !slices.Contains(s.Protocols, n) {
			return s.errAt([]any{"stacks", n}, "stack %s is not one of the protocols (%s): list it there to run it", n, strings.Join(s.Protocols, ", "))
		}
	}
	return nil
}

// CommandStack is the scenario's own stack of that name, if it is one.
func (s *Scenario) CommandStack(name string) (workload.CommandStack, bool) {
	st, ok := s.Stacks[name]
	if !ok {
		return workload.CommandStack{}, false
	}
	return workload.CommandStack{Name: name, Server: st.Server, Client: st.Client, Events: st.Events}, true
}

// BuiltInProtocols are the protocols that are not the scenario's own.
func (s *Scenario) BuiltInProtocols() []string {
	return slices.DeleteFunc(slices.Clone(s.Protocols), func(p string) bool { _, own := s.Stacks[p]; return own })
}

// WorkloadParams are the workload's parameters as the scenario gives them
// (its defaults where it is silent), by name: what a command stack's
// templates may use as {workload.NAME}.
func (s *Scenario) WorkloadParams() map[string]string {
	out := map[string]string{}
	node := &s.Workload
	typeName := "periodic"
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			if node.Content[i].Value == "type" {
				typeName = node.Content[i+1].Value
			}
		}
	}
	if t, err := workload.Lookup(typeName); err == nil {
		for _, p := range t.Params {
			out[p.Name] = p.Default
		}
	}
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i].Value, node.Content[i+1]
			if k != "type" && v.Kind == yaml.ScalarNode {
				out[k] = v.Value
			}
		}
	}
	return out
}

// describeStack is a stack's commands, for tlab validate.
func (st StackSpec) describe() string {
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

// StackLines describe the scenario's own stacks, one line each.
func (s *Scenario) StackLines() []string {
	names := make([]string, 0, len(s.Stacks))
	for n := range s.Stacks {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("stack %s (the scenario's own, given as commands): %s", n, s.Stacks[n].describe()))
	}
	return out
}
