package experiment

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// crossCheckPython finds the Python that runs the HTTP/2 and HTTP/3 real
// client (curl_cffi): the one named by $TLAB_PYTHON, python3 on the PATH,
// or the virtual environment scripts/setup --tests makes beside tlab's
// binary (.venv: Debian 12's system Python is externally managed, so pip
// installs there when it cannot install system-wide). A venv is used only
// when it is as trusted as the binary: owned by root or the user running
// tlab and writable by nobody else, since tlab may run it as root. The
// error says what was tried and why each was not taken.
func crossCheckPython(getenv func(string) string, executable string, canImport func(python string) bool) (string, error) {
	var tried []string
	var candidates []string
	if p := getenv("TLAB_PYTHON"); p != "" {
		candidates = append(candidates, p)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	} else {
		tried = append(tried, "python3: not on the PATH")
	}
	if executable != "" {
		venv := filepath.Join(filepath.Dir(executable), ".venv")
		if err := trustedTree(venv, []string{".", "bin", "lib"}); err == nil {
			candidates = append(candidates, filepath.Join(venv, "bin", "python3"))
		} else if !errors.Is(err, os.ErrNotExist) {
			tried = append(tried, fmt.Sprintf("%s: %v", venv, err))
		}
	}
	for _, p := range candidates {
		if canImport(p) {
			return p, nil
		}
		tried = append(tried, p+": no curl_cffi")
	}
	return "", fmt.Errorf("the HTTP/2 and HTTP/3 client needs Python with curl_cffi (pip install 'curl_cffi<0.17', which scripts/setup --tests does, into .venv where the system's pip refuses; or name one with TLAB_PYTHON); tried %s", strings.Join(tried, "; "))
}

// trustedTree checks that each of dir's listed entries (relative paths)
// is owned by root or this user and writable by neither group nor
// others: what sshd asks of a user's ~/.ssh before it reads it.
func trustedTree(dir string, entries []string) error {
	for _, e := range entries {
		p := filepath.Join(dir, e)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner", p)
		}
		if int(st.Uid) != 0 && int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%s is owned by uid %d, neither root nor this user", p, st.Uid)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s is writable by its group or others (%v)", p, fi.Mode().Perm())
		}
	}
	return nil
}
