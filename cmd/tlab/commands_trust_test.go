package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/testbed/tbtest"
)

// envWithout is the test's environment without any invoking user's
// variables, with extra added.
func envWithout(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SUDO_UID", "SUDO_GID", "SUDO_USER", "DOAS_USER", "PKEXEC_UID":
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// TestShellRunsAsTheInvokingUser: as root, tlab shell's command runs as the
// user sudo (SUDO_UID and SUDO_GID), doas (DOAS_USER, a name) or pkexec
// (PKEXEC_UID) names: `id -u` in it prints nobody's 65534, and $HOME is
// nobody's /nonexistent (as /etc/passwd has it), not root's. Where the
// variable does not name a user, the command runs as root (uid 0) and
// tlab says so on standard error, never silently.
func TestShellRunsAsTheInvokingUser(t *testing.T) {
	tbtest.RequirePrivileges(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the commands drop from root to the invoking user")
	}
	bin := buildTlab(t)
	for _, c := range []struct {
		name    string
		env     []string
		uid     string
		warning bool
	}{
		{"sudo", []string{"SUDO_UID=65534", "SUDO_GID=65534"}, "65534 /nonexistent", false},
		{"doas", []string{"DOAS_USER=nobody"}, "65534 /nonexistent", false},
		{"pkexec", []string{"PKEXEC_UID=65534"}, "65534 /nonexistent", false},
		{"sudo, unreadable", []string{"SUDO_UID=65534x", "SUDO_GID=65534"}, "0 /root", true},
		{"none", nil, "0 /root", true},
	} {
		cmd := exec.Command(bin, "shell", "--", "sh", "-c", `echo "$(id -u) $HOME"`)
		cmd.Env = envWithout(append([]string{"HOME=/root"}, c.env...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: tlab shell: %v\n%s", c.name, err, stderr.String())
		}
		if got := strings.TrimSpace(stdout.String()); got != c.uid {
			t.Errorf("%s: the command ran as uid %s, want %s", c.name, got, c.uid)
		}
		warned := strings.Contains(stderr.String(), "warning:") && strings.Contains(stderr.String(), "run as root")
		if warned != c.warning {
			t.Errorf("%s: warned that the commands run as root: %v, want %v\n%s", c.name, warned, c.warning, stderr.String())
		}
	}
}

// commandScenario is a scenario file whose own stack's client writes the
// uid it runs as into {dir}/uid and reports one answered message.
const commandScenario = `name: own-commands
profiles: [ethernet]
protocols: [mine]
workload: {type: periodic, interval: 25ms}
count: 5
warmup: 0s
stacks:
  mine:
    client: |
      echo "$(id -u) $HOME" > {dir}/uid
      now=$(date +%s%N)
      printf '{"seq":0,"sent_ns":%s,"done_ns":%s,"req_bytes":10,"resp_bytes":10}\n' $now $((now+1000)) > {events}
`

// tlabRun runs tlab with args in env and returns its exit code and
// standard error.
func tlabRun(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errorsAs(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatalf("tlab %v: %v", args, err)
	return 0, ""
}

// TestCommandsFromAFileNeedAllowCommands: tlab run of a scenario file
// whose stacks name commands shows them and refuses (exit 2, the usage
// error) until --allow-commands is given, running nothing and creating
// no run directory; with it they run, as the invoking user under sudo
// (SUDO_UID=65534: id -u in the client prints 65534). A --resume of the
// run directory asks again: its scenario.yaml may have come from anywhere.
func TestCommandsFromAFileNeedAllowCommands(t *testing.T) {
	tbtest.RequirePrivileges(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the commands drop from root to the invoking user")
	}
	bin := buildTlab(t)
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // the invoking user reaches the run directory
	os.Chmod(dir, 0o755)
	file := filepath.Join(dir, "own.yaml")
	if err := os.WriteFile(file, []byte(commandScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	env := envWithout("SUDO_UID=65534", "SUDO_GID=65534")
	args := []string{"run", file, "--out", out, "--no-calibration", "--quality", "off", "--no-report"}

	code, stderr := tlabRun(t, bin, env, args...)
	if code != exitUsage || !strings.Contains(stderr, "--allow-commands") || !strings.Contains(stderr, "$(id -u) $HOME") || !strings.Contains(stderr, "nobody (uid 65534)") {
		t.Errorf("without --allow-commands: exit %d, want %d with the commands, whom they run as and the flag shown:\n%s", code, exitUsage, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("without --allow-commands the run made %s", out)
	}

	code, stderr = tlabRun(t, bin, env, append(args, "--allow-commands")...)
	if code != exitOK {
		t.Fatalf("with --allow-commands: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "commands that run on this machine, as nobody (uid 65534), through sudo") {
		t.Errorf("the run did not show whom the commands run as:\n%s", stderr)
	}
	uids, _ := filepath.Glob(filepath.Join(out, "cells", "*", "commands", "uid"))
	if len(uids) != 1 {
		t.Fatalf("the client's uid file: %v", uids)
	}
	if b, _ := os.ReadFile(uids[0]); strings.TrimSpace(string(b)) != "65534 /nonexistent" {
		t.Errorf("the client ran as uid and HOME %q, want the invoking user's 65534 /nonexistent", strings.TrimSpace(string(b)))
	}

	code, stderr = tlabRun(t, bin, env, "run", "--resume", out)
	if code != exitUsage || !strings.Contains(stderr, "--allow-commands") || !strings.Contains(stderr, "$(id -u) $HOME") {
		t.Errorf("--resume without --allow-commands: exit %d, want %d with the commands shown:\n%s", code, exitUsage, stderr)
	}
	if code, stderr = tlabRun(t, bin, env, "run", "--resume", out, "--allow-commands"); code != exitOK {
		t.Errorf("--resume --allow-commands: exit %d\n%s", code, stderr)
	}
}

// TestValidateAndK8sShowCommands: tlab validate of a scenario file that
// names commands lists them, says they run on this machine and as whom,
// and that tlab run needs --allow-commands for them; tlab k8s refuses to
// write a job that runs them unless given the flag, and then passes it
// to every task (a retried task resumes its shard, which always asks).
func TestValidateAndK8sShowCommands(t *testing.T) {
	file := filepath.Join(t.TempDir(), "own.yaml")
	if err := os.WriteFile(file, []byte(commandScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runValidate(context.Background(), []string{file}, &stdout, &stderr); code != exitOK {
		t.Fatalf("tlab validate: exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"$(id -u) $HOME", "run on this machine", "as the user who starts tlab run", "started as you are now:", "--allow-commands"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("tlab validate does not say %q:\n%s", want, stdout.String())
		}
	}

	stdout.Reset()
	stderr.Reset()
	args := []string{file, "--shards", "1", "--image", "tlab:test"}
	if code := runK8s(context.Background(), args, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "$(id -u) $HOME") {
		t.Errorf("tlab k8s without --allow-commands: exit %d, want %d with the commands shown\n%s", code, exitUsage, stderr.String())
	}
	stdout.Reset()
	if code := runK8s(context.Background(), append(args, "--allow-commands"), &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "- --allow-commands") {
		t.Errorf("tlab k8s --allow-commands: exit %d; the job does not pass the flag to its tasks:\n%s", code, stdout.String())
	}
}
