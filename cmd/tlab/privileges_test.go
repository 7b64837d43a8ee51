package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// builtTlab is the command, compiled once for the whole test binary: each
// of a dozen tests used to link its own.
var builtTlab struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

// buildTlab returns the command compiled into a directory every user can
// read; TestMain removes it when the tests end.
func buildTlab(t *testing.T) string {
	t.Helper()
	b := &builtTlab
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "tlab-bin-"); b.err != nil {
			return
		}
		os.Chmod(b.dir, 0o755)
		b.bin = filepath.Join(b.dir, "tlab")
		b.out, b.err = exec.Command("go", "build", "-o", b.bin, ".").CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("go build: %v\n%s", b.err, b.out)
	}
	return b.bin
}

// removeBuiltTlab removes the shared binary after the tests.
func removeBuiltTlab() {
	if builtTlab.dir != "" {
		os.RemoveAll(builtTlab.dir)
	}
}

// TestUnprivilegedUserRunsInUserNamespace runs tlab as nobody: it must
// re-execute itself in a user namespace and build its testbeds there.
func TestUnprivilegedUserRunsInUserNamespace(t *testing.T) {
	unprivileged(t)
	bin := buildTlab(t)
	cleanUserRegistries(t, 65534)
	out, err := asUser(bin, 65534, "calibrate", "--quick", "--json").Output()
	var ee *exec.ExitError
	if err != nil && !(errorsAs(err, &ee) && (ee.ExitCode() == exitFailure || ee.ExitCode() == exitHostNoisy)) {
		t.Fatalf("unprivileged calibrate: %v\n%s", err, out)
	}
	var r struct {
		Checks []struct{ Name string }
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Checks) < 10 {
		t.Fatalf("unprivileged calibrate printed %q (%v)", out, err)
	}
}

// unprivileged reports whether this machine can run tlab as another user
// in a user namespace, and skips the test otherwise.
func unprivileged(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	if b, _ := os.ReadFile("/proc/sys/user/max_user_namespaces"); strings.TrimSpace(string(b)) == "0" {
		t.Skip("user namespaces are disabled on this kernel")
	}
}

// cleanUserRegistries removes, when the test ends, the run registries the
// given users' runs create (they are the users', not root's, to keep).
//
// What the users' runs left goes with them: the temp directory each record
// names, and the ad-hoc results directories the user owns (a run the test
// killed could not remove its own).
func cleanUserRegistries(t *testing.T, uids ...int) {
	for _, uid := range uids {
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("tlab-runs-%d", uid))
		_, err := os.Stat(dir)
		existed := err == nil
		t.Cleanup(func() {
			if existed {
				return
			}
			records, _ := filepath.Glob(filepath.Join(dir, "*.json"))
			for _, r := range records {
				var rec struct {
					TempDir string `json:"temp_dir"`
				}
				if b, err := os.ReadFile(r); err == nil && json.Unmarshal(b, &rec) == nil &&
					filepath.Dir(rec.TempDir) == filepath.Clean(os.TempDir()) && strings.HasPrefix(filepath.Base(rec.TempDir), "tlab-") {
					os.RemoveAll(rec.TempDir)
				}
			}
			adhoc, _ := filepath.Glob(filepath.Join(os.TempDir(), "tlab-adhoc-*"))
			for _, a := range adhoc {
				if st, err := os.Stat(a); err == nil && st.Sys().(*syscall.Stat_t).Uid == uint32(uid) {
					os.RemoveAll(a)
				}
			}
			os.RemoveAll(dir)
		})
	}
}

// asUser runs tlab as uid, from /, and returns its exit error and output.
func asUser(bin string, uid int, args ...string) *exec.Cmd {
	id := fmt.Sprint(uid)
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", bin}, args...)...)
	cmd.Dir = "/"
	return cmd
}

// TestTwoUnprivilegedUsers: two users, one after the other, each in its own
// user namespace (where both are uid 0) keep their run registries apart.
func TestTwoUnprivilegedUsers(t *testing.T) {
	unprivileged(t)
	bin := buildTlab(t)
	cleanUserRegistries(t, 65533, 65532)
	for _, uid := range []int{65533, 65532} {
		out, err := asUser(bin, uid, "run", "--protocols", "tcp", "--profile", "ethernet", "--count", "5", "--warmup", "0s", "--interval", "5ms").CombinedOutput()
		if err != nil {
			t.Fatalf("user %d: %v\n%s", uid, err, out)
		}
		st, err := os.Stat(filepath.Join(os.TempDir(), fmt.Sprintf("tlab-runs-%d", uid)))
		if err != nil {
			t.Errorf("user %d: no registry of its own: %v", uid, err)
		} else if owner := st.Sys().(*syscall.Stat_t).Uid; owner != uint32(uid) {
			t.Errorf("user %d's registry is owned by %d", uid, owner)
		}
	}
}

// TestKilledParentTakesItsUserNamespaceChild: kill -9 of an unprivileged
// tlab must not leave its re-executed child (in the user namespace)
// running.
func TestKilledParentTakesItsUserNamespaceChild(t *testing.T) {
	unprivileged(t)
	bin := buildTlab(t)
	cleanUserRegistries(t, 65531)
	cmd := asUser(bin, 65531, "run", "--protocols", "tcp", "--profile", "ethernet", "--duration", "60s", "--warmup", "0s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// setpriv execs tlab, so cmd's process is the parent tlab; wait for
	// its child (the same binary) to appear.
	child := 0
	for deadline := time.Now().Add(10 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		child = childRunning(bin, cmd.Process.Pid)
	}
	if child == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("no re-executed child appeared")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if !processRuns(bin) {
			return
		}
	}
	t.Errorf("5 s after kill -9 of the parent, a process still runs %s", bin)
	for _, p := range runningPIDs(bin) {
		syscall.Kill(p, syscall.SIGKILL)
	}
}

// runningPIDs lists the processes whose executable is bin.
func runningPIDs(bin string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, p := range procs {
		if target, err := os.Readlink(p); err == nil && target == bin {
			var pid int
			fmt.Sscanf(p, "/proc/%d/exe", &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

func processRuns(bin string) bool { return len(runningPIDs(bin)) > 0 }

// childRunning returns a process running bin whose parent is ppid, or 0.
func childRunning(bin string, ppid int) int {
	for _, pid := range runningPIDs(bin) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The parent is the 4th field, after the ")" that ends the name.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == fmt.Sprint(ppid) {
			return pid
		}
	}
	return 0
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

// TestUnprivilegedSuiteRunsOnce: a user without privileges who runs a
// suite of two parts gets one run directory with both parts: the suite is
// re-executed in a user namespace once, before its first part (it used to
// be re-executed whole once per part, each time into a new directory).
func TestUnprivilegedSuiteRunsOnce(t *testing.T) {
	unprivileged(t)
	bin := buildTlab(t)
	cleanUserRegistries(t, 65531)
	// Another user must reach the files: not under t.TempDir's 0700 root.
	dir, err := os.MkdirTemp("", "tlab-suite-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	part := func(name string) string {
		p := filepath.Join(dir, name+".yaml")
		os.WriteFile(p, []byte("name: "+name+"\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 5ms}\ncount: 5\nwarmup: 0s\n"), 0o644)
		return p
	}
	suite := filepath.Join(dir, "two.yaml")
	os.WriteFile(suite, []byte("name: two\nsuite: ["+part("one")+", "+part("other")+"]\n"), 0o644)
	out := filepath.Join(dir, "out")
	o, err := asUser(bin, 65531, "run", suite, "--out", out, "--no-calibration", "--quality", "off").CombinedOutput()
	if err != nil {
		t.Fatalf("unprivileged suite: %v\n%s", err, o)
	}
	entries, _ := os.ReadDir(out)
	var parts []string
	for _, e := range entries {
		if e.IsDir() {
			parts = append(parts, e.Name())
		}
	}
	if len(parts) != 2 {
		t.Errorf("the suite's directory holds %v, want its two parts once each\n%s", parts, o)
	}
	if n := strings.Count(string(o), "Suite two"); n != 1 {
		t.Errorf("the suite ended %d times, want once:\n%s", n, o)
	}
}
