package results

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func ownerOf(t *testing.T, path string) (uint32, uint32) {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	s := st.Sys().(*syscall.Stat_t)
	return s.Uid, s.Gid
}

// TestPrepareOutRefusesADirectoryOthersControl: an --out that belongs to
// nobody, that everyone may write in, that a group of others may write
// in, or that is nobody's link, is refused with the reason; root's own
// 0755 directory is used. No sudo here: the invoking user is root.
func TestPrepareOutRefusesADirectoryOthersControl(t *testing.T) {
	needRoot(t)
	t.Setenv("SUDO_UID", "")
	shared, _ := nobodysDir(t)
	base := filepath.Dir(shared)
	mk := func(name string, mode os.FileMode, uid, gid int) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rootsOwn := mk("roots", 0o755, 0, 0)
	worldWritable := mk("world", 0o777, 0, 0)
	groupWritable := mk("group", 0o775, 0, nobody) // nobody's group may write
	link := filepath.Join(shared, "out")
	asNobody(t, "ln -s '"+rootsOwn+"' '"+link+"'")
	for _, c := range []struct {
		path, want string
	}{
		{shared, "belongs to uid 65534"},
		{worldWritable, "others can write in it (mode 0777)"},
		{groupWritable, "others can write in it (mode 0775)"},
		{link, "a link that belongs to uid 65534"},
		{rootsOwn, ""},
	} {
		err := PrepareOut(c.path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it used", c.path, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
}

// TestPrepareOutUnderSudoGivesTheResultsToTheUser: run through sudo by
// nobody, a new --out (and its missing parent) is made nobody's, what
// root writes into it is nobody's, and nobody's existing directory is
// accepted as theirs.
func TestPrepareOutUnderSudoGivesTheResultsToTheUser(t *testing.T) {
	needRoot(t)
	shared, _ := nobodysDir(t)
	t.Setenv("SUDO_UID", "65534")
	t.Setenv("SUDO_GID", "65534")
	if err := PrepareOut(shared); err != nil {
		t.Fatalf("the invoking user's own directory: %v", err)
	}
	out := filepath.Join(shared, "results", "run-1")
	if err := PrepareOut(out); err != nil {
		t.Fatal(err)
	}
	if err := Mkdir(filepath.Join(out, CellsDir)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(filepath.Join(out, CellsDir, DoneFile), []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	f, err := Create(filepath.Join(out, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, p := range []string{filepath.Dir(out), out, filepath.Join(out, CellsDir), filepath.Join(out, CellsDir, DoneFile), filepath.Join(out, "server.log")} {
		if uid, gid := ownerOf(t, p); uid != nobody || gid != nobody {
			t.Errorf("%s belongs to %d:%d, want the invoking user %d:%d", p, uid, gid, nobody, nobody)
		}
	}
	// And nobody can remove all of it, as the user removes their results.
	asNobody(t, "rm -r '"+filepath.Dir(out)+"'")
}

// TestCreateAppendMkdirNeverFollowALink: in a results directory, a link
// planted at server.log, at a cell's server.log to append to, or at
// captures/ is replaced or refused; root's file and directory are
// untouched.
func TestCreateAppendMkdirNeverFollowALink(t *testing.T) {
	needRoot(t)
	t.Setenv("SUDO_UID", "")
	dir, secret := nobodysDir(t)
	elsewhere := filepath.Join(filepath.Dir(secret), "roots-dir")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	asNobody(t, "ln -s '"+secret+"' '"+filepath.Join(dir, "server.log")+"' && ln -s '"+secret+"' '"+filepath.Join(dir, "keys.log")+"' && ln -s '"+elsewhere+"' '"+filepath.Join(dir, "captures")+"'")
	f, err := Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "the server's output\n")
	f.Close()
	if _, err := Append(filepath.Join(dir, "keys.log")); err == nil {
		t.Error("Append opened a link")
	}
	if err := Mkdir(filepath.Join(dir, "captures")); err == nil {
		t.Error("Mkdir accepted a link to a directory elsewhere")
	}
	if b, _ := os.ReadFile(secret); string(b) != "root's only\n" || modeOf(t, secret) != 0o600 {
		t.Fatalf("root's file now holds %q, mode %v", b, modeOf(t, secret))
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("root's directory now holds %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "server.log")); string(b) != "the server's output\n" {
		t.Fatalf("server.log holds %q", b)
	}
	// Appending to a regular server.log (a cell's next attempt) works.
	f, err = Append(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "attempt 2\n")
	f.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "server.log")); string(b) != "the server's output\nattempt 2\n" {
		t.Fatalf("server.log holds %q after appending", b)
	}
	// Nor through a link that stays inside the directory.
	asNobody(t, "ln -s server.log '"+filepath.Join(dir, "cross.csv")+"'")
	if f, err := Append(filepath.Join(dir, "cross.csv")); err == nil {
		f.Close()
		t.Error("Append opened a link to another file of the directory")
	}
}

// TestMkdirAllRefusesALinkOnTheWay: MkdirAll makes missing parents, and a
// link on the way (qlog -> root's directory) is refused, nothing made
// where it points.
func TestMkdirAllRefusesALinkOnTheWay(t *testing.T) {
	needRoot(t)
	t.Setenv("SUDO_UID", "")
	dir, secret := nobodysDir(t)
	if err := MkdirAll(filepath.Join(dir, "a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "a", "b", "c")); err != nil || !st.IsDir() {
		t.Fatalf("a/b/c: %v", err)
	}
	elsewhere := filepath.Join(filepath.Dir(secret), "roots-dir")
	os.Mkdir(elsewhere, 0o700)
	asNobody(t, "ln -s '"+elsewhere+"' '"+filepath.Join(dir, "qlog")+"'")
	if err := MkdirAll(filepath.Join(dir, "qlog", "static")); err == nil {
		t.Error("MkdirAll went through a link")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("made in root's directory: %v", entries)
	}
}
