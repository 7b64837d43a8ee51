package cellrun

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"tlab/internal/calibrate"
	"tlab/internal/emu"
	"tlab/internal/results"
)

// sysctls worth knowing when reading transport results.
var sysctlKeys = []string{
	"net/ipv4/tcp_congestion_control", "net/ipv4/tcp_available_congestion_control",
	"net/core/rmem_max", "net/core/wmem_max", "net/core/rmem_default", "net/core/wmem_default",
	"net/ipv4/tcp_rmem", "net/ipv4/tcp_wmem", "net/ipv4/udp_mem", "net/ipv4/tcp_ecn",
	"net/ipv4/tcp_slow_start_after_idle", "net/ipv4/tcp_timestamps", "net/ipv4/tcp_sack",
}

func NewManifest() *results.Manifest {
	m := &results.Manifest{Go: runtime.Version(), Dependencies: map[string]string{}, Sysctls: map[string]string{}, Cores: runtime.NumCPU(), Started: time.Now()}
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

// UnstampedWarning says why a manifest without the commit tlab was built
// from cannot tell which code measured the run ("" when it has it): the
// go command stamps the commit only when it builds inside the git
// checkout with version stamping on (-buildvcs, on by default).
func UnstampedWarning(m *results.Manifest) string {
	if m.Commit != "" {
		return ""
	}
	return "this tlab was built without the commit it came from (version stamping off: built outside its git checkout, with -buildvcs=false, GOFLAGS holding it, or by go test), so the manifest cannot say which code measured this run; build it in the checkout with go build -buildvcs=true ./cmd/tlab"
}

// calibrateInto takes a quick calibration of the engine the cells will
// use and records it in m.
func CalibrateInto(ctx context.Context, m *results.Manifest, emulator emu.EngineOptions) error {
	r, err := calibrate.Run(ctx, calibrate.Options{Quick: true, NoModes: true, Emulator: emulator, Seed: 1})
	if err != nil {
		return err
	}
	m.Calibrations = append(m.Calibrations, r)
	return nil
}
