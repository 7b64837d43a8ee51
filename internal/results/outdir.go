package results

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"tlab/internal/invoker"
)

// Files tlab writes as it goes (a server's log, a pcap, the TLS key log, a
// cell's records) go through Create and Append; directories below an
// output directory through Mkdir; the output directory itself through
// PrepareOut. None follows a link planted where a file or directory is
// to be: run as root, tlab would otherwise write, or make, root's file
// wherever the link points.

// Create makes a new file at path to write as it goes. It is created
// under a temporary name (O_EXCL|O_NOFOLLOW) inside path's directory and
// renamed to path at once, so whatever was at path, a link included, is
// replaced, not written through. Run as root, the file takes its
// directory's owner.
func Create(path string) (*os.File, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return CreateIn(root, filepath.Base(path))
}

// CreateIn is Create for name inside root.
func CreateIn(root *os.Root, name string) (*os.File, error) {
	shown := filepath.Join(root.Name(), name)
	dir, base := filepath.Split(name)
	tmpName := dir + "." + base + "." + rand.Text()[:12] + ".tmp"
	f, err := root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	err = f.Chmod(0o644)
	if err == nil {
		err = chownToDir(root, f, filepath.Dir(name))
	}
	if err == nil {
		err = root.Rename(tmpName, name)
	}
	if err != nil {
		f.Close()
		root.Remove(tmpName)
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	return f, nil
}

// Append opens path to add to its end (a cell's server.log across
// attempts), creating it as Create does when it is missing. An existing
// path is opened only if it is a regular file, not through a link.
func Append(path string) (*os.File, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	name := filepath.Base(path)
	// os.Root follows a link that stays inside the directory, O_NOFOLLOW
	// or not: the name is looked at first (Lstat), and the file opened
	// must be the one looked at (a swap in between is refused).
	lst, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return CreateIn(root, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !lst.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s), not written to", path, lst.Mode().Type())
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if st, err := f.Stat(); err != nil || !os.SameFile(st, lst) {
		f.Close()
		return nil, fmt.Errorf("%s: changed while it was opened, not written to", path)
	}
	return f, nil
}

// Mkdir makes the directory path if it is missing, as MkdirIn does in
// path's parent: a link there is refused, not followed.
func Mkdir(path string) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer root.Close()
	return MkdirIn(root, filepath.Base(path))
}

// MkdirAll is Mkdir for a path whose parents may be missing too: from
// the deepest directory that exists, each missing one is made as MkdirIn
// makes it (a link on the way is refused, not followed).
func MkdirAll(path string) error {
	path = filepath.Clean(path)
	base := path
	var st fs.FileInfo
	for {
		var err error
		if st, err = os.Lstat(base); err == nil || base == filepath.Dir(base) {
			break
		}
		base = filepath.Dir(base)
	}
	if base == path {
		return Mkdir(path)
	}
	if st != nil && !st.IsDir() {
		return fmt.Errorf("%s: not a directory (%s), not made through", base, st.Mode().Type())
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return err
	}
	defer root.Close()
	rel, err := filepath.Rel(base, path)
	if err != nil {
		return err
	}
	return MkdirIn(root, rel)
}

// InvokingUser is the user who ran tlab through sudo, doas or pkexec
// (invoker.Find, the same user commands run as), when tlab runs as root:
// the owner of what it writes for
// them; ok is false otherwise.
func InvokingUser() (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	u := invoker.Find()
	if u.Cred == nil || u.Cred.Uid == 0 {
		return 0, 0, false
	}
	return int(u.Cred.Uid), int(u.Cred.Gid), true
}

// PrepareOut makes or checks an output directory (--out) before root
// writes into it, as sshd's StrictModes checks ~/.ssh. A missing one is
// made, with any missing parents, and under sudo given to the invoking
// user, so that their results are theirs to read and remove. An existing
// one is used only if it is a directory (a link to one only if the link
// too belongs to root or the invoking user), owned by root or the
// invoking user, and not writable by others: anyone else who can write
// in it can plant links where tlab's files are to be.
func PrepareOut(path string) error {
	uid, gid, sudo := InvokingUser()
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return makeOut(path, uid, gid, sudo)
	}
	return CheckOut(path)
}

func makeOut(path string, uid, gid int, sudo bool) error {
	// The directories to make, deepest last.
	var missing []string
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil || p == filepath.Dir(p) {
			break
		}
		missing = append([]string{p}, missing...)
	}
	for _, p := range missing {
		root, err := os.OpenRoot(filepath.Dir(p))
		if err != nil {
			return err
		}
		err = root.Mkdir(filepath.Base(p), 0o755)
		if err == nil && sudo {
			err = root.Lchown(filepath.Base(p), uid, gid)
		}
		root.Close()
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("--out %s: %w", path, err)
		}
	}
	return CheckOut(path)
}

// CheckOut tells whether tlab may write into the existing directory path
// (see PrepareOut), the error saying why not.
func CheckOut(path string) error {
	uid, _, sudo := InvokingUser()
	trusted := func(owner uint32) bool {
		return owner == 0 || owner == uint32(os.Geteuid()) || sudo && owner == uint32(uid)
	}
	lst, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if lst.Mode()&fs.ModeSymlink != 0 {
		if owner := lst.Sys().(*syscall.Stat_t).Uid; !trusted(owner) {
			return fmt.Errorf("--out %s: a link that belongs to uid %d, not to you or root; give the directory it names", path, owner)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("--out %s: not a directory", path)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if !trusted(sys.Uid) {
		return fmt.Errorf("--out %s: belongs to uid %d, not to you or root: whoever owns it can plant links where tlab writes", path, sys.Uid)
	}
	perm := st.Mode().Perm()
	if perm&0o002 != 0 || perm&0o020 != 0 && !privateGroup(sys.Uid, sys.Gid) {
		return fmt.Errorf("--out %s: others can write in it (mode %04o), and could plant links where tlab writes; chmod go-w it or choose another", path, perm)
	}
	return nil
}

// privateGroup tells whether gid is uid's own group (the group of the
// same name as the user, as useradd makes by default), whose write
// permission lets in no one else.
func privateGroup(uid, gid uint32) bool {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil || u.Gid != strconv.FormatUint(uint64(gid), 10) {
		return false
	}
	g, err := user.LookupGroupId(u.Gid)
	return err == nil && g.Name == u.Username
}
