package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildTlab compiles the command into a directory every user can read.
func buildTlab(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tlab-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "tlab")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestUnprivilegedUserRunsInUserNamespace runs tlab as nobody: it must
// re-execute itself in a user namespace and build its testbeds there.
func TestUnprivilegedUserRunsInUserNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	if b, _ := os.ReadFile("/proc/sys/user/max_user_namespaces"); strings.TrimSpace(string(b)) == "0" {
		t.Skip("user namespaces are disabled on this kernel")
	}
	bin := buildTlab(t)
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "calibrate", "--quick", "--json")
	cmd.Dir = "/"
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errorsAs(err, &ee) && ee.ExitCode() == exitFailure) {
		t.Fatalf("unprivileged calibrate: %v\n%s", err, out)
	}
	var r struct {
		Checks []struct{ Name string }
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Checks) < 10 {
		t.Fatalf("unprivileged calibrate printed %q (%v)", out, err)
	}
}

// TestInterruptRemovesEverything sends SIGINT in the middle of a
// calibration and checks that tlab exits 130 and leaves no emulator.
func TestInterruptRemovesEverything(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bin := buildTlab(t)
	cmd := exec.Command(bin, "calibrate", "--quick")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != exitCanceled {
			t.Errorf("exit after SIGINT: %v; stderr %s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("tlab did not stop within 30 s of SIGINT")
	}
	// No emulator child (or anything else running our binary) remains.
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		if target, err := os.Readlink(p); err == nil && target == bin {
			t.Errorf("%s still runs %s after the interrupt", p, bin)
		}
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say it was interrupted: %s", stderr.String())
	}
}
