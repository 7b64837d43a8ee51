// Package tbtest holds what tests that build testbeds share: a TestMain that
// lets the test binary serve as the emulator's executable (and a CPU-limited
// host's server child), and a check that
// skips (or, in CI, fails) a test that lacks the privileges to build
// namespaces.
package tbtest

import (
	"os"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/testbed"
	"tlab/internal/units"
	"tlab/internal/workload"
)

// Main runs the tests of a package whose tests build testbeds. Call it from
// TestMain: the emulator is started by re-executing the test binary.
// cleanups run after the tests, before the process exits (what the
// package's tests shared, such as a built binary).
func Main(m *testing.M, cleanups ...func()) {
	emu.RunChildIfRequested()
	hostnoise.RunChildIfRequested()
	testbed.RunServerChildIfRequested(workload.ServeProcessRequest)
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	os.Exit(code)
}

// RequirePrivileges skips t without the capabilities a testbed needs; in
// CI, which runs as root, it fails instead, so a test never silently stops
// running there.
func RequirePrivileges(t testing.TB) {
	t.Helper()
	if err := testbed.CheckPrivileges(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run as root: %v", err)
		}
		t.Skip(err)
	}
}

// ClientServer builds a client and a server joined by a link of oneWay
// delay each way, closed when the test ends; it skips (or fails in CI)
// without the privileges.
func ClientServer(t testing.TB, oneWay time.Duration) *testbed.Testbed {
	t.Helper()
	RequirePrivileges(t)
	d := emu.DirectionConfig{Delay: units.Duration(oneWay)}
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: d, Down: d}), testbed.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	return tb
}
