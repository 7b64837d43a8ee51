package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCrossCheckFindsItsPython: the h2/h3 real client's Python is
// $TLAB_PYTHON, else python3 on the PATH, else the .venv beside tlab's
// binary, each only if it imports curl_cffi; a venv writable by others is
// refused (tlab may run it as root), and the error names everything tried.
func TestCrossCheckFindsItsPython(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no python3 on the PATH
	bin := t.TempDir()
	venv := filepath.Join(bin, ".venv")
	for _, d := range []string{"bin", "lib"} {
		if err := os.MkdirAll(filepath.Join(venv, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(venv, 0o755); err != nil {
		t.Fatal(err)
	}
	venvPython := filepath.Join(venv, "bin", "python3")
	exe := filepath.Join(bin, "tlab")
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	with := func(ok ...string) func(string) bool {
		return func(p string) bool {
			for _, o := range ok {
				if p == o {
					return true
				}
			}
			return false
		}
	}

	if p, err := crossCheckPython(env(map[string]string{"TLAB_PYTHON": "/opt/py"}), exe, with("/opt/py", venvPython)); err != nil || p != "/opt/py" {
		t.Errorf("TLAB_PYTHON with curl_cffi: %q, %v; want /opt/py first", p, err)
	}
	if p, err := crossCheckPython(env(nil), exe, with(venvPython)); err != nil || p != venvPython {
		t.Errorf("only the venv has curl_cffi: %q, %v; want %s", p, err, venvPython)
	}
	if err := os.Chmod(filepath.Join(venv, "lib"), 0o777); err != nil {
		t.Fatal(err)
	}
	p, err := crossCheckPython(env(nil), exe, with(venvPython))
	if err == nil || p != "" || !strings.Contains(err.Error(), "writable by its group or others") || !strings.Contains(err.Error(), "python3: not on the PATH") {
		t.Errorf("a world-writable venv: %q, %v; want it refused and named, with every other try", p, err)
	}
}
