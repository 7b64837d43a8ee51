// Package scenarios holds tlab's presets: one scenario file per published
// study tlab reproduces, each in a full and a short size, and the quick
// comparison the README runs. `tlab run NAME` finds them by name.
package scenarios

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed *.yaml
var files embed.FS

// Names lists the presets.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Read returns a preset's YAML.
func Read(name string) ([]byte, bool) {
	b, err := files.ReadFile(name + ".yaml")
	return b, err == nil
}

// Suite is a preset made of several scenarios, run one after the other
// into subdirectories of one run directory: a study whose parts need
// different topologies (study D's point-to-point links and shared Wi-Fi)
// is one command.
type Suite struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Study       string   `yaml:"study"`
	Parts       []string `yaml:"suite"`
}

// ReadSuite returns the named preset as a suite, when it is one: a file
// with a suite: list of other presets.
func ReadSuite(name string) (Suite, bool, error) {
	data, ok := Read(name)
	if !ok {
		return Suite{}, false, nil
	}
	return ParseSuite("preset "+name, data, func(part string) (bool, bool) {
		_, exists := Read(part)
		_, isSuite, _ := ReadSuite(part)
		return exists, isSuite
	})
}

// ParseSuite reads a suite from a file's content, when it is one (it has a
// suite: list); part tells whether a part exists and whether it is itself
// a suite, which is refused.
func ParseSuite(where string, data []byte, part func(string) (exists, isSuite bool)) (Suite, bool, error) {
	var probe struct {
		Suite []string `yaml:"suite"`
	}
	if err := yaml.Unmarshal(data, &probe); err != nil || len(probe.Suite) == 0 {
		return Suite{}, false, nil
	}
	var s Suite
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return s, true, fmt.Errorf("%s: %w", where, err)
	}
	for _, p := range s.Parts {
		exists, isSuite := part(p)
		if !exists {
			return s, true, fmt.Errorf("%s: part %q is neither a preset nor a scenario file", where, p)
		}
		if isSuite {
			return s, true, fmt.Errorf("%s: part %q is itself a suite", where, p)
		}
	}
	return s, true, nil
}
