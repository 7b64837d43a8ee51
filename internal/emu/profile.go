package emu

import (
	"embed"
	"errors"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/strictyaml"
	"tlab/internal/units"
	"tlab/internal/untrusted"
)

//go:embed profiles/*.yaml
var builtinProfiles embed.FS

// Profile is a named, documented link configuration.
type Profile struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Source      string     `json:"source"`
	Link        LinkConfig `json:"link"`
	// File is where the profile was read from ("builtin" for tlab's own).
	File string `json:"file"`
}

// overlay is the YAML form of a profile or of an override: settings at the
// top level apply to both directions, those under up and down to one; rtt
// sets both delays to half of it.
type overlay struct {
	Name        string          `yaml:"name"`
	Description string          `yaml:"description"`
	Source      string          `yaml:"source"`
	RTT         units.Duration  `yaml:"rtt"`
	Both        DirectionConfig `yaml:",inline"`
	Up          yaml.Node       `yaml:"up"`
	Down        yaml.Node       `yaml:"down"`
}

// metaKeys are the overlay keys that are not direction settings.
var metaKeys = map[string]bool{"name": true, "description": true, "source": true, "rtt": true, "up": true, "down": true}

// ApplyOverlay applies a profile or override node to link: top-level
// direction settings to both directions, then up and down to each, field by
// field, so that anything the overlay does not mention keeps its value.
func ApplyOverlay(file string, node *yaml.Node, link *LinkConfig) error {
	if node.Kind != yaml.MappingNode {
		return &strictyaml.Error{File: file, Line: node.Line, Msg: "a link profile is a mapping of settings"}
	}
	var ov overlay
	if err := strictyaml.Check(file, node, typeOfOverlay); err != nil {
		return err
	}
	// Settings for both directions: the top-level keys without the meta
	// keys, decoded onto each direction so unset fields keep their values.
	both := &yaml.Node{Kind: yaml.MappingNode, Line: node.Line}
	var rttNode, upNode, downNode *yaml.Node
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		switch k.Value {
		case "rtt":
			rttNode = v
		case "up":
			upNode = v
		case "down":
			downNode = v
		}
		if !metaKeys[k.Value] {
			both.Content = append(both.Content, k, v)
		}
	}
	for _, d := range []*DirectionConfig{&link.Up, &link.Down} {
		replaceRateOrTrace(both, d)
		if err := strictyaml.Decode(file, both, d); err != nil {
			return err
		}
	}
	if rttNode != nil {
		if err := rttNode.Decode(&ov.RTT); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		half := units.Duration(ov.RTT.D() / 2)
		link.Up.Delay, link.Down.Delay = half, ov.RTT-half
	}
	if upNode != nil {
		replaceRateOrTrace(upNode, &link.Up)
		if err := strictyaml.Decode(file, upNode, &link.Up); err != nil {
			return err
		}
	}
	if downNode != nil {
		replaceRateOrTrace(downNode, &link.Down)
		if err := strictyaml.Decode(file, downNode, &link.Down); err != nil {
			return err
		}
	}
	if err := link.Validate(); err != nil {
		return &strictyaml.Error{File: file, Line: node.Line, Msg: err.Error()}
	}
	return nil
}

// replaceRateOrTrace lets an overlay's rate replace the trace it lays
// over, and its trace the rate: each sets the direction's capacity, so an
// override (--link down.trace=FILE on 5g) replaces what it contradicts
// instead of being refused as "rate and trace are exclusive". Both in one
// overlay are still refused.
func replaceRateOrTrace(node *yaml.Node, d *DirectionConfig) {
	if node == nil || node.Kind != yaml.MappingNode {
		return
	}
	has := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		has[node.Content[i].Value] = true
	}
	switch {
	case has["trace"] && !has["rate"]:
		d.Rate = 0
	case has["rate"] && !has["trace"]:
		d.Trace, d.TracePhase = "", ""
	}
}

var typeOfOverlay = reflect.TypeOf(&overlay{})

// ParseProfile reads a profile file's content.
func ParseProfile(file string, data []byte) (Profile, error) {
	node, err := strictyaml.Parse(file, data)
	if err != nil {
		return Profile{}, err
	}
	var ov overlay
	if err := strictyaml.Decode(file, node, &ov); err != nil {
		return Profile{}, err
	}
	p := Profile{Name: ov.Name, Description: ov.Description, Source: ov.Source, File: file}
	if p.Name == "" {
		p.Name = strings.TrimSuffix(path.Base(file), path.Ext(file))
	}
	if err := ApplyOverlay(file, node, &p.Link); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// BuiltinProfiles returns tlab's own profiles, sorted by name.
func BuiltinProfiles() []Profile {
	entries, _ := builtinProfiles.ReadDir("profiles")
	var out []Profile
	for _, e := range entries {
		data, _ := builtinProfiles.ReadFile("profiles/" + e.Name())
		p, err := ParseProfile("builtin:"+e.Name(), data)
		if err != nil {
			panic(fmt.Sprintf("built-in profile %s: %v", e.Name(), err)) // caught by tests
		}
		p.File = "builtin"
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// MaxProfileFile bounds what is read of a profile file: a profile is a
// few hundred bytes of YAML (the built-in ones are under 2 KiB), so 1 MiB
// is generous, and a file that is not one (/dev/zero) ends with an error
// naming it instead of filling memory.
const MaxProfileFile = 1 << 20

// LoadProfile resolves a profile by name (built-in) or path (a YAML file).
func LoadProfile(nameOrPath string) (Profile, error) {
	// A built-in profile lives in its name's file: parse that one alone.
	// Listing a scenario's cells loads a profile per cell, and parsing all
	// eighteen each time made a 288-cell preset take seconds to list.
	if data, err := builtinProfiles.ReadFile("profiles/" + nameOrPath + ".yaml"); err == nil {
		if p, err := ParseProfile("builtin:"+nameOrPath+".yaml", data); err == nil && p.Name == nameOrPath {
			p.File = "builtin"
			return p, nil
		}
	}
	for _, p := range BuiltinProfiles() {
		if p.Name == nameOrPath {
			return p, nil
		}
	}
	if strings.ContainsAny(nameOrPath, "/.") {
		data, err := untrusted.ReadFile(nameOrPath, MaxProfileFile)
		if err != nil {
			return Profile{}, fmt.Errorf("profile: %w", err)
		}
		return ParseProfile(nameOrPath, data)
	}
	var names []string
	for _, p := range BuiltinProfiles() {
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("no profile %q: built-in profiles are %s, or give a path to a YAML file", nameOrPath, strings.Join(names, ", "))
}

// ResolveLink builds a link from a "+"-separated stack of profiles, each
// applied over the previous ("wifi+loss-ge-b"), then the overrides.
func ResolveLink(stack string, overrides *yaml.Node) (LinkConfig, []Profile, error) {
	return ResolveLinkIn(stack, overrides, "--link")
}

// ResolveLinkIn is ResolveLink for overrides read from file (a scenario's
// link: section), so that an error names the file and the line.
func ResolveLinkIn(stack string, overrides *yaml.Node, file string) (LinkConfig, []Profile, error) {
	var link LinkConfig
	var used []Profile
	if stack != "" {
		for _, name := range strings.Split(stack, "+") {
			p, err := LoadProfile(strings.TrimSpace(name))
			if err != nil {
				return link, nil, err
			}
			used = append(used, p)
			// Re-apply the profile's own source so that only the fields
			// it sets change.
			node, err := p.overlayNode()
			if err != nil {
				return link, nil, err
			}
			if err := ApplyOverlay(p.Name, node, &link); err != nil {
				return link, nil, err
			}
		}
	}
	if overrides != nil {
		if err := ApplyOverlay(file, overrides, &link); err != nil {
			return link, nil, err
		}
	}
	return link, used, nil
}

// overlayNode returns the YAML node the profile was read from.
func (p Profile) overlayNode() (*yaml.Node, error) {
	var data []byte
	var err error
	if p.File == "builtin" {
		data, err = builtinProfiles.ReadFile("profiles/" + p.Name + ".yaml")
	} else {
		data, err = untrusted.ReadFile(p.File, MaxProfileFile)
	}
	if err != nil {
		return nil, err
	}
	return strictyaml.Parse(p.Name, data)
}

// ParseOverrides turns "rate=50Mbit,up.delay=10ms,loss=1%" into an overlay
// node. Keys are the YAML keys of a profile, dotted for nesting.
func ParseOverrides(s string) (*yaml.Node, error) {
	root := &yaml.Node{Kind: yaml.MappingNode, Line: 1}
	if strings.TrimSpace(s) == "" {
		return root, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("link override %q: want key=value, for example rate=50Mbit or up.loss=1%%", kv)
		}
		if err := setPath(root, strings.Split(k, "."), v); err != nil {
			return nil, fmt.Errorf("link override %q: %w", kv, err)
		}
	}
	return root, nil
}

func setPath(m *yaml.Node, keys []string, value string) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != keys[0] {
			continue
		}
		if len(keys) == 1 {
			return errors.New("set twice")
		}
		child := m.Content[i+1]
		if child.Kind != yaml.MappingNode {
			return fmt.Errorf("%s is a value, not a group", keys[0])
		}
		return setPath(child, keys[1:], value)
	}
	k := &yaml.Node{Kind: yaml.ScalarNode, Value: keys[0], Line: 1}
	if len(keys) == 1 {
		m.Content = append(m.Content, k, &yaml.Node{Kind: yaml.ScalarNode, Value: value, Line: 1})
		return nil
	}
	child := &yaml.Node{Kind: yaml.MappingNode, Line: 1}
	m.Content = append(m.Content, k, child)
	return setPath(child, keys[1:], value)
}

// UnmarshalYAML accepts a loss model as a mapping or, as a shorthand, a
// single rate ("loss: 1%"), meaning Bernoulli loss.
func (l *LossConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		r, err := units.ParseRatio(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: loss: %w", n.Line, err)
		}
		*l = LossConfig{Model: LossBernoulli, Rate: r}
		if r == 0 {
			*l = LossConfig{}
		}
		return nil
	}
	if err := strictyaml.Check("", n, reflect.TypeOf(plainLoss{})); err != nil {
		return err
	}
	p := plainLoss(*l)
	if err := n.Decode(&p); err != nil {
		return err
	}
	*l = LossConfig(p)
	return nil
}

// plainLoss is LossConfig without its UnmarshalYAML, for decoding the
// mapping form.
type plainLoss LossConfig
