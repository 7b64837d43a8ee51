package experiment

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"tlab/internal/calibrate"
)

// Manifest records what a run needs to be understood and repeated: the
// tool and its dependencies, the machine, the kernel's network settings,
// the resolved scenario and its seeds, and the emulator's calibration taken
// when the run started (and at every resume).
type Manifest struct {
	Tool         string            `json:"tool"`
	Commit       string            `json:"commit,omitempty"`
	Modified     bool              `json:"modified,omitempty"`
	Go           string            `json:"go"`
	Dependencies map[string]string `json:"dependencies"`
	Hostname     string            `json:"hostname"`
	Kernel       string            `json:"kernel"`
	CPU          string            `json:"cpu"`
	Cores        int               `json:"cores"`
	Sysctls      map[string]string `json:"sysctls"`

	Scenario     string `json:"scenario"`
	ScenarioFile string `json:"scenario_file"`
	Seed         uint64 `json:"seed"`
	Cells        int    `json:"cells"`

	Started  time.Time   `json:"started"`
	Resumed  []time.Time `json:"resumed,omitempty"`
	Finished *time.Time  `json:"finished,omitempty"`
	// Calibrations are tlab calibrate --quick reports, one per start or
	// resume; Calibration is skipped only when asked.
	Calibrations []*calibrate.Report `json:"calibrations"`
}

// sysctls worth knowing when reading transport results.
var sysctlKeys = []string{
	"net/ipv4/tcp_congestion_control", "net/ipv4/tcp_available_congestion_control",
	"net/core/rmem_max", "net/core/wmem_max", "net/core/rmem_default", "net/core/wmem_default",
	"net/ipv4/tcp_rmem", "net/ipv4/tcp_wmem", "net/ipv4/udp_mem", "net/ipv4/tcp_ecn",
	"net/ipv4/tcp_slow_start_after_idle", "net/ipv4/tcp_timestamps", "net/ipv4/tcp_sack",
}

func newManifest() *Manifest {
	m := &Manifest{Go: runtime.Version(), Dependencies: map[string]string{}, Sysctls: map[string]string{}, Cores: runtime.NumCPU(), Started: time.Now()}
	m.Tool = "tlab"
	if bi, ok := debug.ReadBuildInfo(); ok {
		m.Tool = "tlab " + bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				m.Commit = s.Value
			case "vcs.modified":
				m.Modified = s.Value == "true"
			}
		}
		for _, d := range bi.Deps {
			m.Dependencies[d.Path] = d.Version
		}
	}
	mach := calibrate.DescribeMachine()
	m.Hostname, m.Kernel, m.CPU = mach.Hostname, mach.Kernel, mach.CPU
	for _, k := range sysctlKeys {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			m.Sysctls[strings.ReplaceAll(k, "/", ".")] = strings.Join(strings.Fields(string(b)), " ")
		}
	}
	return m
}

// calibrateInto takes a quick calibration and records it.
func (m *Manifest) calibrateInto(ctx context.Context, mode string) error {
	r, err := calibrate.Run(ctx, calibrate.Options{Quick: true, Mode: mode, Seed: 1})
	if err != nil {
		return err
	}
	m.Calibrations = append(m.Calibrations, r)
	return nil
}

func (m *Manifest) save(dir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(dir+"/manifest.json", append(b, '\n'))
}

// ReadManifest reads a run's manifest.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(dir + "/manifest.json")
	if err != nil {
		return nil, err
	}
	var m Manifest
	return &m, json.Unmarshal(b, &m)
}
