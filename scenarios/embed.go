// Package scenarios holds tlab's presets: one scenario file per published
// study tlab reproduces, each in a full and a short size, and the quick
// comparison the README runs. `tlab run NAME` finds them by name.
package scenarios

import (
	"embed"
	"io/fs"
	"sort"
	"strings"
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
