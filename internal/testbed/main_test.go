package testbed

import (
	"os"
	"testing"

	"tlab/internal/emu"
)

func TestMain(m *testing.M) {
	// Test binaries that build testbeds are also the emulator's executable.
	emu.RunChildIfRequested()
	RunServerChildIfRequested(spinServer)
	if os.Getenv(killedRunEnv) != "" {
		killedRunChild()
	}
	if reach := os.Getenv(egressChildEnv); reach != "" {
		egressChild(reach)
	}
	if mode := os.Getenv(hostileCleanupEnv); mode != "" {
		hostileCleanupChild(mode)
	}
	if os.Getenv(tempDirChildEnv) != "" {
		tempDirChild()
	}
	os.Exit(m.Run())
}

// requirePrivileges skips a test that needs namespaces when the process
// cannot make them; CI runs as root, where it never skips.
func requirePrivileges(t *testing.T) {
	t.Helper()
	if err := CheckPrivileges(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must run as root: %v", err)
		}
		t.Skip(err)
	}
}
