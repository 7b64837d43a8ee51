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
	tb, err := Build(ClientServer(delayLoss(time.Millisecond, 0)), Options{})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Println("READY", tb.ID, tb.TempDir, tb.Emulator().PID())
	time.Sleep(time.Minute)
	os.Exit(2)
}

// netNamespaces returns the network namespaces that processes or mounts
// hold right now, by inode.
func netNamespaces() map[string]bool {
	out := map[string]bool{}
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/ns/net")
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, p := range append(tasks, fds...) {
		if l, err := os.Readlink(p); err == nil && strings.HasPrefix(l, "net:[") {
			out[l] = true
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, "net:[") {
			out[line] = true
		}
	}
	return out
}

func TestKilledRunLeavesNothingAfterCleanup(t *testing.T) {
	requirePrivileges(t)
	before := netNamespaces()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killedRunEnv+"=1")
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
	during := netNamespaces()
	if len(during) < len(before)+3 {
		t.Errorf("the run should hold 3 namespaces (client, server, router): %d before, %d during", len(before), len(during))
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
	actions, err := Cleanup(false)
	if err != nil {
		t.Fatal(err)
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
	after := netNamespaces()
	for ns := range after {
		if !before[ns] {
			t.Errorf("namespace %s outlived the run", ns)
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
