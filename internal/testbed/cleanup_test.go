package testbed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const killedRunEnv = "TLAB_TEST_KILLED_RUN"

// killedRunChild builds a testbed, prints its id and temp dir, and waits to
// be killed.
func killedRunChild() {
	topo := ClientServer(delayLoss(time.Millisecond, 0))
	// A CPU limit too: its cgroup must not outlive the run either.
	topo.CPU = map[string]CPULimit{"server": LimitCPUs(0.5)}
	tb, err := Build(topo, Options{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("READY", tb.ID, tb.TempDir, tb.Emulator().PID())
	time.Sleep(time.Minute)
	os.Exit(2)
}

// heldNamespaces returns the network namespaces (by "net:[inode]") that
// the given processes hold through their threads or file descriptors.
func heldNamespaces(pids ...int) map[string]bool {
	out := map[string]bool{}
	var patterns []string
	for _, pid := range pids {
		patterns = append(patterns, fmt.Sprintf("/proc/%d/task/[0-9]*/ns/net", pid), fmt.Sprintf("/proc/%d/fd/*", pid))
	}
	for _, pat := range patterns {
		paths, _ := filepath.Glob(pat)
		for _, p := range paths {
			if l, err := os.Readlink(p); err == nil && strings.HasPrefix(l, "net:[") {
				out[l] = true
			}
		}
	}
	return out
}

func TestKilledRunLeavesNothingAfterCleanup(t *testing.T) {
	requirePrivileges(t)
	// A token in the environment marks every process of the run: its
	// descendants inherit it, so none can hide after the kill.
	token := fmt.Sprintf("run-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killedRunEnv+"="+token)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	n, _ := out.Read(buf)
	var id, tmp string
	var emuPID int
	if _, err := fmt.Sscanf(string(buf[:n]), "READY %s %s %d", &id, &tmp, &emuPID); err != nil {
		cmd.Process.Kill()
		t.Fatalf("child: %q", buf[:n])
	}
	// The run's own namespaces: held by the child (tests of other packages
	// may build testbeds at the same time, so only these are followed).
	runNS := heldNamespaces(cmd.Process.Pid)
	self := heldNamespaces(os.Getpid())
	for ns := range self {
		delete(runNS, ns) // the root namespace, inherited
	}
	if len(runNS) < 3 {
		t.Errorf("the run should hold 3 namespaces (client, server, router), holds %v", runNS)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// The emulator dies with its parent, and with them every namespace.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && syscall.Kill(emuPID, 0) == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if syscall.Kill(emuPID, 0) == nil {
		t.Errorf("emulator %d outlived its killed parent", emuPID)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("a killed run should have left its temp dir for cleanup: %v", err)
	}
	if len(leftoverCPUGroups(id)) == 0 {
		t.Errorf("a killed run should have left its cgroup for cleanup")
	}
	actions, err := Cleanup(false)
	if err != nil {
		t.Fatal(err)
	}
	if left := leftoverCPUGroups(id); len(left) > 0 {
		t.Errorf("cgroups %v survived cleanup", left)
	}
	removedTmp := false
	for _, a := range actions {
		if a.Run != id {
			continue
		}
		if a.Error != "" {
			t.Errorf("cleanup %s: %s", a.What, a.Error)
		}
		if strings.Contains(a.What, tmp) {
			removedTmp = true
		}
	}
	if !removedTmp {
		t.Errorf("cleanup did not report removing %s: %+v", tmp, actions)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temp dir %s survived cleanup", tmp)
	}
	if _, err := os.Stat(filepath.Join(RegistryDir, id+".json")); !os.IsNotExist(err) && err != nil {
		t.Errorf("stat record: %v", err)
	} else if err == nil {
		t.Errorf("run record survived cleanup")
	}
	// A namespace lives while a process holds it or a mount pins it. No
	// process of the run may remain, and no mount may pin its namespaces.
	// (Inode numbers are reused at once, so a namespace that parallel
	// tests create may carry one of the old numbers: processes, not
	// numbers, are what is checked.)
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range envs {
		if b, err := os.ReadFile(e); err == nil && strings.Contains(string(b), token) {
			t.Errorf("%s belongs to the killed run and still exists", filepath.Dir(e))
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for ns := range runNS {
		if strings.Contains(string(mounts), ns) {
			t.Errorf("namespace %s is still mounted", ns)
		}
	}
}

func TestCleanupLeavesLiveRunsAlone(t *testing.T) {
	requirePrivileges(t)
	tb := build(t, ClientServer(delayLoss(time.Millisecond, 0)), Options{})
	actions, err := Cleanup(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		if a.Run == tb.ID {
			t.Fatalf("cleanup touched a live run: %+v", a)
		}
	}
	if _, err := os.Stat(tb.TempDir); err != nil {
		t.Fatalf("live run's temp dir: %v", err)
	}
}

func TestHostIDMapsThroughUserNamespaces(t *testing.T) {
	for _, c := range []struct {
		uidMap  string
		id, out int
	}{
		{"         0          0 4294967295\n", 0, 0},
		{"         0       1000          1\n", 0, 1000},
		{"         0      65534          1\n", 0, 65534},
		{"         0     100000      65536\n", 5, 100005},
		{"", 7, 7},
	} {
		if got := hostID(c.uidMap, c.id); got != c.out {
			t.Errorf("hostID(%q, %d) = %d, want %d", c.uidMap, c.id, got, c.out)
		}
	}
}

const tempDirChildEnv = "TLAB_TEST_TEMP_DIR_CHILD"

// tempDirChild makes a registered temporary directory (an ad-hoc run's),
// prints it and waits to be killed.
func tempDirChild() {
	d, err := MakeTempDir("adhoc")
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("READY", d.Path)
	time.Sleep(time.Minute)
	os.Exit(2)
}

// TestKilledProcessesTempDirIsCleanedUp: a temporary directory (an ad-hoc
// run's results) is no live testbed and is left alone while its process
// lives; after a kill -9, cleanup removes it and its record.
func TestKilledProcessesTempDirIsCleanedUp(t *testing.T) {
	requirePrivileges(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), tempDirChildEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var word, path string
	if _, err := fmt.Fscan(out, &word, &path); err != nil || word != "READY" {
		t.Fatalf("child: %q %q %v", word, path, err)
	}
	t.Cleanup(func() { os.RemoveAll(path) })
	if !strings.HasPrefix(filepath.Base(path), "tlab-adhoc-") {
		t.Errorf("temp dir %s is not named tlab-adhoc-*", path)
	}
	for _, r := range OtherLiveRuns() {
		if r.PID == cmd.Process.Pid {
			t.Errorf("a temporary directory counted as a live testbed: %v", r)
		}
	}
	if _, err := Cleanup(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("cleanup removed a live process's directory: %v", err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	actions, err := Cleanup(false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("after the kill, %s is still there (%v); cleanup did %+v", path, err, actions)
	}
	removedRecord := false
	for _, a := range actions {
		if strings.HasPrefix(a.What, "remove record") && strings.Contains(a.What, filepath.Base(path)[len("tlab-"):]) && a.Done {
			removedRecord = true
		}
	}
	if !removedRecord {
		t.Errorf("cleanup did not remove the directory's record: %+v", actions)
	}
}
