package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/plan"
	"tlab/internal/scenario"
	"tlab/scenarios"
)

// LoadScenario reads a scenario file, or a preset by name, with --set
// overrides.
func LoadScenario(nameOrFile string, sets []string) (*scenario.Scenario, error) {
	if IsFile(nameOrFile) {
		return scenario.Load(nameOrFile, sets...)
	}
	return LoadPreset(nameOrFile, sets)
}

// LoadPreset reads one of tlab's own scenarios by name, whatever files
// the working directory holds (tlab presets lists them so).
func LoadPreset(name string, sets []string) (*scenario.Scenario, error) {
	data, ok := scenarios.Read(name)
	if !ok {
		return nil, fmt.Errorf("no scenario file or preset %q; presets are %s", name, strings.Join(scenarios.Names(), ", "))
	}
	return scenario.Parse("preset:"+name, data, sets...)
}

// IsPreset tells whether name names one of tlab's own scenarios (a
// preset) rather than a file.
func IsPreset(name string) bool {
	if IsFile(name) {
		return false
	}
	_, ok := scenarios.Read(name)
	return ok
}

// IsFile tells whether name names a file rather than a preset: it exists,
// or it has a slash or a dot.
func IsFile(name string) bool {
	_, err := os.Stat(name)
	return err == nil || strings.ContainsAny(name, "/.")
}

// CellOverhead is what building and removing a cell's testbed adds to its
// plan, in estimates.
const CellOverhead = 400 * time.Millisecond

// Plan estimates how long cells take: each cell's plan on its own links (a
// workload paced by round trips takes longer on a satellite, one waiting
// for handshakes longer on a lossy link), and
// CellOverhead per cell.
func Plan(cells []plan.Cell) time.Duration {
	var total time.Duration
	for _, c := range cells {
		total += c.Workload.Info().PlanOn(cellrun.PathOf(c.Topology)) + c.Cross.LeadTime() + CellOverhead
	}
	return total
}

// pathOf is what a workload's plan knows of a topology: its round trip and

// DefaultDir is where a run of name goes without --out:
// results/NAME-YYYYMMDD-HHMMSS.
func DefaultDir(name string, now time.Time) string {
	return filepath.Join("results", name+"-"+now.Format("20060102-150405"))
}
