package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
)

// TestLinkSetChangesALiveShell: while `tlab shell` runs a command, `tlab
// link set` changes its link through the run's control socket, says when
// the change took effect on the link's clock and what the direction's
// settings became, and the shell's link-events.csv keeps the change.
func TestLinkSetChangesALiveShell(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	socketsBefore := liveSockets(t)
	out := t.TempDir()
	shell := exec.Command(bin, "shell", "--out", out, "--link", "delay=5ms,rate=50Mbit", "--as-root", "--", "sleep", "4")
	var stderr bytes.Buffer
	shell.Stderr = &stderr
	if err := shell.Start(); err != nil {
		t.Fatal(err)
	}
	defer shell.Process.Kill()
	// The shell's run is the socket that was not there before and whose
	// record names the shell as its owner: other runs (the race half of
	// scripts/test beside this package, anyone's tlab) may start theirs
	// meanwhile.
	var id string
	for deadline := time.Now().Add(3 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for s := range liveSockets(t) {
			if !socketsBefore[s] && runOwner(strings.TrimSuffix(s, ".sock")+".json") == shell.Process.Pid {
				id = strings.TrimSuffix(filepath.Base(s), ".sock")
			}
		}
	}
	if id == "" {
		t.Fatalf("the shell's control socket never appeared\n%s", stderr.String())
	}
	// Another user may not: the socket is root's alone (mode 0600), as
	// the run registry's records are.
	if other := asNobody(t, bin); other != nil {
		cmd := exec.Command(other[0], append(other[1:], "link", "set", "--run", id, "up.delay=1s")...)
		if got, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(got), "permission denied") {
			t.Errorf("another user's tlab link set: %v\n%s", err, got)
		}
	}
	set := exec.Command(bin, "link", "set", "--run", id, "up.loss=5%,down.rate=10Mbit")
	got, err := set.CombinedOutput()
	if err != nil {
		t.Fatalf("tlab link set: %v\n%s", err, got)
	}
	// What a user reads: each direction's change and its new settings.
	for _, want := range []string{"path up at ", "loss 5%", "path down at ", "rate 10 Mbit/s"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("tlab link set printed %q, want %q in it", got, want)
		}
	}
	if err := shell.Wait(); err != nil {
		t.Fatalf("tlab shell: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(filepath.Join(out, emu.LinkEventsFile))
	if err != nil {
		t.Fatalf("the shell kept no link events: %v", err)
	}
	defer f.Close()
	events, _, err := emu.ReadLinkEvents("link-events.csv", f)
	if err != nil || len(events) != 2 || events[0].Source != emu.EventLive || events[0].State.Loss != 0.05 || events[1].State.RateBps != 10e6 {
		t.Errorf("link-events.csv: %+v (%v), want the two live changes", events, err)
	}
	// The run is gone: its socket with it, and link set says so.
	if _, err := testbed.LiveSocket(id); err == nil {
		t.Errorf("run %s's socket outlived it", id)
	}
}

// asNobody returns the command that runs a copy of bin as the user
// nobody (setpriv), or nil when this machine cannot.
func asNobody(t *testing.T, bin string) []string {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Log("no setpriv: another user's access is not checked")
		return nil
	}
	dir, err := os.MkdirTemp("", "tlab-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "tlab")
	if err := os.WriteFile(copyPath, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", copyPath}
}

// runOwner is the pid of the process that owns the run record at path
// (0 when it cannot be read).
func runOwner(path string) int {
	var rec struct {
		Owner struct {
			PID int `json:"pid"`
		} `json:"owner"`
	}
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &rec) != nil {
		return 0
	}
	return rec.Owner.PID
}

// liveSockets lists the control sockets in root's run registry.
func liveSockets(t *testing.T) map[string]bool {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(testbed.RegistryDir, "*.sock"))
	out := map[string]bool{}
	for _, s := range m {
		out[s] = true
	}
	return out
}
