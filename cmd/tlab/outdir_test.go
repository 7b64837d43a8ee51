package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tlab/internal/testbed/tbtest"
)

// hostileOut makes, under a directory every user can reach, a directory
// owned by nobody (the hostile local user) and a root 0600 file beside
// it: what a link nobody plants would aim at.
func hostileOut(t *testing.T) (nobodys, secret string) {
	t.Helper()
	base := t.TempDir()
	os.Chmod(filepath.Dir(base), 0o755)
	os.Chmod(base, 0o755)
	nobodys = filepath.Join(base, "shared-out")
	if err := os.Mkdir(nobodys, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(nobodys, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	secret = filepath.Join(base, "root-secret")
	if err := os.WriteFile(secret, []byte("root's only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return nobodys, secret
}

// plantAsNobody runs ln -s target link as uid nobody.
func plantAsNobody(t *testing.T, target, link string) {
	t.Helper()
	cmd := exec.Command("ln", "-s", target, link)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ln as nobody: %v: %s", err, out)
	}
}

// TestShellOutOfAnotherUserIsRefused: sudo tlab shell --out DIR
// --capture --server CMD, where DIR is nobody's and nobody planted
// server.log as a link to a root 0600 file (and captures/ as a link to a
// directory of root's): the server's output reached root's file and a
// root-owned pcap appeared where the second link pointed. tlab now
// refuses DIR before starting anything and names its owner.
func TestShellOutOfAnotherUserIsRefused(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	out, secret := hostileOut(t)
	rootsDir := filepath.Join(filepath.Dir(secret), "roots-dir")
	os.Mkdir(rootsDir, 0o700)
	plantAsNobody(t, secret, filepath.Join(out, "server.log"))
	plantAsNobody(t, rootsDir, filepath.Join(out, "captures"))
	cmd := exec.Command(bin, "shell", "--out", out, "--capture", "--server", "echo the server speaks", "--as-root", "--", "true")
	cmd.Env = append(os.Environ(), "SUDO_UID=", "SUDO_GID=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil || !strings.Contains(stderr.String(), "belongs to uid 65534") {
		t.Errorf("tlab shell: %v, want a refusal naming the owner\n%s", err, stderr.String())
	}
	if b, _ := os.ReadFile(secret); string(b) != "root's only\n" {
		t.Fatalf("root's file now holds %q", b)
	}
	if entries, _ := os.ReadDir(rootsDir); len(entries) != 0 {
		t.Fatalf("root's directory now holds %v", entries)
	}
}

// TestShellOutWritesNoLinkTarget: in the invoking user's own --out
// (here root's), a server.log link left there (by an earlier tarball, a
// mistake) is replaced by the server's log, not written through.
func TestShellOutWritesNoLinkTarget(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	out := t.TempDir()
	secret := filepath.Join(t.TempDir(), "root-secret")
	os.WriteFile(secret, []byte("root's only\n"), 0o600)
	os.Symlink(secret, filepath.Join(out, "server.log"))
	cmd := exec.Command(bin, "shell", "--out", out, "--server", "echo the server speaks; sleep 5", "--server-wait", "300ms", "--as-root", "--", "true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tlab shell: %v\n%s", err, stderr.String())
	}
	if b, _ := os.ReadFile(secret); string(b) != "root's only\n" {
		t.Fatalf("root's file now holds %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(out, "server.log")); err != nil || !strings.Contains(string(b), "the server speaks") {
		t.Fatalf("server.log: %q, %v", b, err)
	}
}

// TestRunOutOfAnotherUserIsRefused: tlab run --capture --out DIR into
// nobody's DIR is refused before a cell runs (keys.log, pcaps and the
// server's log would be written into it).
func TestRunOutOfAnotherUserIsRefused(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	out, secret := hostileOut(t)
	plantAsNobody(t, secret, filepath.Join(out, "scenario.yaml"))
	cmd := exec.Command(bin, "run", "--protocols", "tcp", "--profile", "ethernet", "--count", "5", "--capture", "--out", out, "--no-calibration")
	cmd.Env = append(os.Environ(), "SUDO_UID=", "SUDO_GID=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil || !strings.Contains(stderr.String(), "belongs to uid 65534") {
		t.Errorf("tlab run: %v, want a refusal naming the owner\n%s", err, stderr.String())
	}
	if b, _ := os.ReadFile(secret); string(b) != "root's only\n" {
		t.Fatalf("root's file now holds %q", b)
	}
}

// TestReportOfAReceivedDirectoryWithAFIFOEnds: tlab report DIR on a
// received directory whose manifest.json is a FIFO hung until SIGKILL,
// and one whose manifest.json links to /dev/zero ran out of memory; both
// now end at once with an error naming the file.
func TestReportOfAReceivedDirectoryWithAFIFOEnds(t *testing.T) {
	for name, plant := range map[string]func(string) error{
		"a FIFO":              func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"a link to /dev/zero": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte("[]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := plant(filepath.Join(dir, "manifest.json")); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- runReport(t.Context(), []string{dir}, &stdout, &stderr) }()
		select {
		case code := <-done:
			if code == exitOK || !strings.Contains(stderr.String(), "manifest.json") {
				t.Errorf("%s: exit %d, %q; want a failure naming manifest.json", name, code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: tlab report still running after 10 s", name)
		}
	}
}
