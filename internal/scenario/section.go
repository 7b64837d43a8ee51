package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/results"
	"tlab/internal/strictyaml"
)

// Section is a part of a scenario that another package owns: it decodes
// and checks the section and reads its value back (cross:, qoo:,
// require:, explore:). The scenario keeps the section's node and the
// decoded value, and imports nothing of the owner's.
type Section struct {
	// Name is the section's key at the top of a scenario file.
	Name string
	// Decode decodes and checks a present section, with the rest of
	// the scenario's core (profiles, protocols, workload, topology,
	// plots) already valid. It runs for the scenario and again for
	// each cell's (the matrix's values applied), and what it returns is
	// that scenario's value of the section (Value). Its errors name
	// the file and line (ErrorAt, strictyaml.ErrorAt).
	Decode func(s *Scenario, node *yaml.Node) (any, error)
	// Check, when set, checks a present section against the whole
	// scenario (not each cell's), once its matrix is valid: what needs
	// every point (an exploration's ends) or warns about the run
	// (Warn).
	Check func(s *Scenario, node *yaml.Node) error
	// Whole marks a section of the whole scenario only: each cell (one
	// point) is made without it, as an exploration's ranges.
	Whole bool
	// Columns, when set, names the summary columns the section's value
	// adds to every cell (cross traffic's cross_*): a requirement on
	// one of them is one the scenario produces.
	Columns func(value any) []string
	// Protocols, when set, names the protocols a present section
	// provides (a scenario's own stacks), read from its node before the
	// scenario checks protocols: (an error names the file's line, as
	// Decode's). The scenario accepts them there without the protocol
	// registry, leaves them out of the protocols settings apply to
	// (BuiltInProtocols), and the section's Decode checks them.
	Protocols func(file string, node *yaml.Node) ([]string, error)
}

// providedProtocols are the protocol names the present sections provide.
func providedProtocols(file string, nodes map[string]*yaml.Node) (map[string]bool, error) {
	out := map[string]bool{}
	for _, name := range sectionNames() {
		p, node := sections[name].Protocols, nodes[name]
		if p == nil || node == nil {
			continue
		}
		names, err := p(file, node)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out[n] = true
		}
	}
	return out, nil
}

// sections are the registered sections by name, filled from the owning
// packages' init (as database/sql drivers register themselves).
var sections = map[string]Section{}

// RegisterSection registers a section the scenario keeps for its owner.
// A program that does not link the owning package refuses the section as
// an unknown key.
func RegisterSection(sec Section) {
	if sec.Name == "" || sec.Decode == nil && sec.Check == nil {
		panic("scenario: a section needs a name and a Decode or a Check")
	}
	if _, dup := sections[sec.Name]; dup {
		panic("scenario: section " + sec.Name + " registered twice")
	}
	if slices.Contains(ownKeys(), sec.Name) {
		panic("scenario: section " + sec.Name + " is one of the scenario's own fields")
	}
	sections[sec.Name] = sec
}

// sectionNames are the registered sections' names, sorted: the order
// their Decode and Check run in.
func sectionNames() []string {
	names := make([]string, 0, len(sections))
	for n := range sections {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// splitSections returns a copy of root without the registered sections'
// keys (what the scenario's own fields decode from) and the sections'
// nodes by name. A key that is neither a field nor a registered section
// is refused at its line, naming both kinds.
func splitSections(file string, root *yaml.Node) (*yaml.Node, map[string]*yaml.Node, error) {
	own := ownKeys()
	if root.Kind != yaml.MappingNode {
		// The scenario's own decoding names what it wants.
		return root, nil, nil
	}
	core := *root
	core.Content = nil
	found := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if slices.Contains(own, k.Value) {
			core.Content = append(core.Content, k, v)
			continue
		}
		if _, ok := sections[k.Value]; !ok {
			names := slices.Concat(own, sectionNames())
			sort.Strings(names)
			return nil, nil, &strictyaml.Error{File: file, Line: k.Line, Msg: fmt.Sprintf("unknown key %q; expected one of: %s", k.Value, strings.Join(names, ", "))}
		}
		found[k.Value] = v
	}
	return &core, found, nil
}

// ownKeys are the keys the Scenario's own fields decode (their yaml
// tags).
func ownKeys() []string {
	t := reflect.TypeOf(Scenario{})
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); f.IsExported() && name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// decodeSections runs the Decode of each registered section present.
func (s *Scenario) decodeSections() error {
	s.values = map[string]any{}
	for _, name := range sectionNames() {
		sec, node := sections[name], s.nodes[name]
		if node == nil || sec.Decode == nil {
			continue
		}
		v, err := sec.Decode(s, node)
		if err != nil {
			return err
		}
		s.values[name] = v
	}
	return nil
}

// checkSections runs the Check of each registered section present, on
// the whole scenario.
func (s *Scenario) checkSections() error {
	if s.cell {
		return nil
	}
	for _, name := range sectionNames() {
		sec, node := sections[name], s.nodes[name]
		if node == nil || sec.Check == nil {
			continue
		}
		if err := sec.Check(s, node); err != nil {
			return err
		}
	}
	return nil
}

// SectionNode is the node of a section the scenario has (nil when it
// has none).
func (s *Scenario) SectionNode(name string) *yaml.Node { return s.nodes[name] }

// Value is the decoded value of a registered section in a scenario (or a
// cell's scenario), and whether the scenario has the section.
func Value[T any](s *Scenario, name string) (T, bool) {
	v, ok := s.values[name].(T)
	return v, ok
}

// SectionColumns are the summary columns the scenario's sections add to
// every cell.
func (s *Scenario) SectionColumns() []string {
	var out []string
	for _, name := range sectionNames() {
		if v, ok := s.values[name]; ok && sections[name].Columns != nil {
			out = append(out, sections[name].Columns(v)...)
		}
	}
	return out
}

// Warn adds a warning about the whole scenario (err names its file and
// line), carried by every cell's, as tlab validate and a run print them.
func (s *Scenario) Warn(err error) { s.whole = append(s.whole, err.Error()) }

// ErrorAt makes an error at the line of the node at path (mapping keys
// and list indices from the top of the file; the top when absent).
func (s *Scenario) ErrorAt(path []any, format string, args ...any) error {
	return s.errAt(path, format, args...)
}

// Has says whether the scenario's file has a node at path.
func (s *Scenario) Has(path ...any) bool { return nodeAt(s.root, path) != nil }

// IsCell says whether the scenario is one point of a matrix (a cell's,
// or a swept value checked alone) rather than the whole.
func (s *Scenario) IsCell() bool { return s.cell }

// CellAt is the cell of one point given by its fields' values (dotted
// paths, as a matrix's keys), for a profile, a protocol and a
// repetition: a point an exploration chose. Its id names the point and
// the repetition rather than a position, so that the same point is the
// same cell however the search reached it (a resume finds it done), and
// its seed is the repetition's, the same for every protocol. The point's
// scenario comes with it (plan.CompileAt compiles the two).
func (s *Scenario) CellAt(profile, protocol string, rep int, params []results.Param) (Cell, *Scenario, error) {
	keys := make([]string, len(params))
	vals := make([]*yaml.Node, len(params))
	parts := []string{"x", profile, protocol}
	for i, p := range params {
		keys[i] = p.Key
		vals[i] = &yaml.Node{Kind: yaml.ScalarNode, Value: p.Value}
		parts = append(parts, p.Key[strings.LastIndex(p.Key, ".")+1:]+"="+p.Value)
	}
	inst, err := s.with(keys, vals)
	if err != nil {
		return Cell{}, nil, err
	}
	parts = append(parts, fmt.Sprintf("r%d", rep))
	return Cell{ID: results.SafeName(strings.Join(parts, "_")), Profile: profile, Site: s.Sites[profile], Protocol: protocol,
		Rep: rep, Params: params, Seed: RepetitionSeed(inst.Seed, rep)}, inst, nil
}
