package results

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is the hostile local user of these tests: uid and gid 65534.
const nobody = 65534

// needRoot skips where the test cannot act as root and as nobody.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it plays root writing results and nobody planting links")
	}
}

// nobodysDir returns a directory owned by nobody (mode 0755) that nobody
// can reach, and a root-owned 0600 file outside it: the file a planted
// link aims at.
func nobodysDir(t *testing.T) (dir, secret string) {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir = filepath.Join(base, "shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	secret = filepath.Join(base, "root-secret")
	if err := os.WriteFile(secret, []byte("root's only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, secret
}

// asNobody runs a shell script as uid nobody.
func asNobody(t *testing.T, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %s: %v: %s", script, err, out)
	}
}

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestWriteAtomicSetsTheModeOfItsOwnFile: a watcher (nobody, who owns the
// directory) swaps the temporary file for a link to a root 0600 file
// between its fsync and the setting of its mode. Setting the mode by name
// (os.Chmod(tmp.Name())) followed the link and made root's file 0644; the
// mode is set on the open file, so root's file stays 0600.
func TestWriteAtomicSetsTheModeOfItsOwnFile(t *testing.T) {
	needRoot(t)
	dir, secret := nobodysDir(t)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	swapped := false
	aw := atomicWriter{afterSync: func(tmpName string) {
		tmp := filepath.Join(dir, tmpName)
		asNobody(t, "mv '"+tmp+"' '"+tmp+".moved' && ln -s '"+secret+"' '"+tmp+"'")
		swapped = true
	}}
	aw.write(root, SummaryJSON, func(w io.Writer) error { _, err := io.WriteString(w, "[]\n"); return err })
	if !swapped {
		t.Fatal("the seam was not reached")
	}
	if m := modeOf(t, secret); m != 0o600 {
		t.Fatalf("root's 0600 file became %v through a link swapped in for the temporary file", m)
	}
}

// TestWriteAtomicReplacesAPlantedLink: a link planted at the file's name
// (summary.json -> a root 0600 file) is replaced, not written through.
func TestWriteAtomicReplacesAPlantedLink(t *testing.T) {
	needRoot(t)
	dir, secret := nobodysDir(t)
	asNobody(t, "ln -s '"+secret+"' '"+filepath.Join(dir, SummaryJSON)+"'")
	if err := WriteFileAtomic(filepath.Join(dir, SummaryJSON), []byte("[]\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "root's only\n" || modeOf(t, secret) != 0o600 {
		t.Fatalf("root's file now holds %q, mode %v", b, modeOf(t, secret))
	}
	if st, err := os.Lstat(filepath.Join(dir, SummaryJSON)); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("summary.json is not a regular file: %v %v", st, err)
	}
}

// TestWriteAtomicInStaysInTheDirectory: a planted directory link
// (plots -> a directory of root's) is refused, nothing lands there.
func TestWriteAtomicInStaysInTheDirectory(t *testing.T) {
	needRoot(t)
	dir, secret := nobodysDir(t)
	rootsDir := filepath.Dir(secret)
	asNobody(t, "ln -s '"+rootsDir+"' '"+filepath.Join(dir, "plots")+"'")
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	err = WriteAtomicIn(root, "plots/delay.png", func(w io.Writer) error { _, err := io.WriteString(w, "png"); return err })
	if err == nil {
		t.Fatal("wrote through a link out of the results directory")
	}
	if entries, _ := os.ReadDir(rootsDir); len(entries) != 2 { // shared/ and root-secret
		t.Fatalf("root's directory now holds %v", entries)
	}
}

// TestWriteAtomicGivesTheFileToTheDirectorysOwner: root writing into a
// user's results directory leaves a file the user owns (and can remove).
func TestWriteAtomicGivesTheFileToTheDirectorysOwner(t *testing.T) {
	needRoot(t)
	dir, _ := nobodysDir(t)
	path := filepath.Join(dir, ManifestFile)
	if err := WriteFileAtomic(path, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := st.Sys().(*syscall.Stat_t); s.Uid != nobody || s.Gid != nobody || st.Mode().Perm() != 0o644 {
		t.Fatalf("owner %d:%d mode %v, want %d:%d 0644", s.Uid, s.Gid, st.Mode().Perm(), nobody, nobody)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || strings.HasSuffix(entries[0].Name(), ".tmp") {
		t.Fatalf("left in the directory: %v", entries)
	}
}
