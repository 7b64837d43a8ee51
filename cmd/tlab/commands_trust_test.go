package main

import (
	"bytes"
	"os"
	"os/exec"
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
// (PKEXEC_UID) names: `id -u` in it prints nobody's 65534. Where the
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
		{"sudo", []string{"SUDO_UID=65534", "SUDO_GID=65534"}, "65534", false},
		{"doas", []string{"DOAS_USER=nobody"}, "65534", false},
		{"pkexec", []string{"PKEXEC_UID=65534"}, "65534", false},
		{"sudo, unreadable", []string{"SUDO_UID=65534x", "SUDO_GID=65534"}, "0", true},
		{"none", nil, "0", true},
	} {
		cmd := exec.Command(bin, "shell", "--", "id", "-u")
		cmd.Env = envWithout(c.env...)
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
