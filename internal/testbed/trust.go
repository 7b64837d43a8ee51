package testbed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tlab runs as root, and the run registry tells it what to kill, remove
// and undo after a run that died. Whatever it acts on must therefore come
// from someone who could have done the same thing himself: a registry is
// trusted only when it belongs to this process's user (or to root) and
// nobody else can write to it or to a directory above it, as sshd's
// StrictModes checks ~/.ssh; and every field of a record is checked
// against what tlab itself writes before it is used.

// maxRecordSize bounds the read of one record: tlab's own are a few KB.
const maxRecordSize = 1 << 20

var (
	// tableName, vethName and tempDirName are the names tlab gives
	// (egress_linux.go, register, MakeTempDir).
	tableName   = regexp.MustCompile(`^tlab_[0-9a-f]{8}$`)
	vethName    = regexp.MustCompile(`^tlx[0-9a-f]{8}$`)
	tempDirName = regexp.MustCompile(`^tlab-([a-z]+-)?[0-9]{8}T[0-9]{6}-[0-9a-f]{8}$`)
	runIDName   = regexp.MustCompile(`^([a-z]+-)?[0-9]{8}T[0-9]{6}-[0-9a-f]{8}$`)
	// userRegistryName is the temp directory's per-user registry.
	userRegistryName = regexp.MustCompile(`^tlab-runs-([0-9]+)$`)
)

// checkRegistryDir decides whether dir may be read as a run registry and
// returns its owner (a uid as this process sees it). It must be a real
// directory (no link), owned by this process's user or by root, writable
// by its owner only; a tlab-runs-UID directory must belong to UID; and
// every directory above it must be owned by root or this user and be
// writable by nobody else, unless it is sticky (/tmp), where others
// cannot rename or remove what is not theirs.
func checkRegistryDir(dir string) (uint32, error) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return 0, fmt.Errorf("run registry %q: not a clean absolute path", dir)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return 0, fmt.Errorf("run registry %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, fmt.Errorf("run registry %s: not a directory (a link?)", dir)
	}
	self := uint32(os.Geteuid())
	if st.Uid != self && st.Uid != 0 {
		return 0, fmt.Errorf("run registry %s: owned by uid %d, not by this user (%d) or root", dir, st.Uid, self)
	}
	if st.Mode&0o022 != 0 {
		return 0, fmt.Errorf("run registry %s: others can write to it (mode %o)", dir, st.Mode&0o7777)
	}
	if m := userRegistryName.FindStringSubmatch(filepath.Base(dir)); m != nil {
		named, err := strconv.ParseUint(m[1], 10, 32)
		if err != nil || hostIDOf(int(st.Uid)) != int(named) {
			return 0, fmt.Errorf("run registry %s: owned by uid %d, not by the uid its name gives", dir, hostIDOf(int(st.Uid)))
		}
	}
	if err := checkAncestors(filepath.Dir(dir), self); err != nil {
		return 0, fmt.Errorf("run registry %s: %w", dir, err)
	}
	return st.Uid, nil
}

// checkAncestors checks dir and every directory above it (through links,
// as they resolve): owned by root or owner, and writable by nobody else
// unless sticky.
func checkAncestors(dir string, owner uint32) error {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	for p := real; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			return err
		}
		if st.Uid != 0 && st.Uid != owner && !(st.Uid == overflowUID && !inInitialUserNS()) {
			return fmt.Errorf("%s is owned by uid %d", p, st.Uid)
		}
		if st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0 {
			return fmt.Errorf("others can write to %s (mode %o)", p, st.Mode&0o7777)
		}
		if p == "/" {
			return nil
		}
	}
}

// overflowUID is how a user namespace shows a uid it does not map (the
// machine's root, to an unprivileged user's namespace): such a process
// has no more rights than the user, and root's /tmp looks like this.
const overflowUID = 65534

// inInitialUserNS tells whether this process runs in the machine's own
// user namespace, where uids are the machine's.
func inInitialUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// hostIDOf maps a uid of this namespace to the initial namespace's.
func hostIDOf(uid int) int {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return uid
	}
	return hostID(string(b), uid)
}

// readRecordFile reads one record of the registry open as dirFD (whose
// owner is owner), without following a link, and only if it is a regular
// file of owner that nobody else can write. The read is bounded.
func readRecordFile(dirFD int, name string, owner uint32) ([]byte, error) {
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, errors.New("not a regular file")
	case st.Uid != owner:
		return nil, fmt.Errorf("owned by uid %d, not by the registry's owner %d", st.Uid, owner)
	case st.Mode&0o022 != 0:
		return nil, fmt.Errorf("others can write to it (mode %o)", st.Mode&0o7777)
	}
	// One byte past the bound, so that decodeRecord sees it is too long.
	return io.ReadAll(io.LimitReader(f, maxRecordSize+1))
}

// decodeRecord decodes a record and checks every field against what tlab
// writes (validate).
func decodeRecord(b []byte) (*runRecord, error) {
	if len(b) > maxRecordSize {
		return nil, fmt.Errorf("record larger than %d bytes", maxRecordSize)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	r := &runRecord{}
	if err := dec.Decode(r); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the record")
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// validate checks that every field is one tlab could have written.
func (r *runRecord) validate() error {
	if !runIDName.MatchString(r.ID) {
		return fmt.Errorf("run id %q is not tlab's", r.ID)
	}
	if r.Kind != "" && r.Kind != kindDir {
		return fmt.Errorf("kind %q is not tlab's", r.Kind)
	}
	for _, c := range r.Label {
		if c < 0x20 || c == 0x7f {
			return errors.New("label holds control characters")
		}
	}
	if len(r.Label) > 4096 {
		return errors.New("label longer than 4096 bytes")
	}
	if r.Owner.PID <= 1 {
		return fmt.Errorf("owner pid %d", r.Owner.PID)
	}
	if len(r.Children) > 4096 {
		return fmt.Errorf("%d children", len(r.Children))
	}
	for _, c := range r.Children {
		if c.PID <= 1 {
			return fmt.Errorf("child pid %d", c.PID)
		}
	}
	if r.TempDir != "" {
		if !filepath.IsAbs(r.TempDir) || filepath.Clean(r.TempDir) != r.TempDir || !tempDirName.MatchString(filepath.Base(r.TempDir)) {
			return fmt.Errorf("temp dir %q is not one tlab makes", r.TempDir)
		}
	}
	if e := r.Egress; e != nil {
		if !tableName.MatchString(e.Table) {
			return fmt.Errorf("nftables table %q is not tlab's", e.Table)
		}
		if !vethName.MatchString(e.Veth) {
			return fmt.Errorf("veth %q is not tlab's", e.Veth)
		}
		for iface, was := range e.Forwarding {
			if !validIfname(iface) {
				return fmt.Errorf("forwarding key %q is no interface name", iface)
			}
			if was != "0" && was != "1" {
				return fmt.Errorf("forwarding value %q for %s is not 0 or 1", was, iface)
			}
		}
		if e.Gateway != "" {
			gw := net.ParseIP(e.Gateway).To4()
			if gw == nil || gw[0] != 198 || gw[1] != 19 {
				return fmt.Errorf("gateway %q is not in tlab's 198.19.0.0/16", e.Gateway)
			}
		}
		if len(e.Guards) > 64 {
			return fmt.Errorf("%d guards", len(e.Guards))
		}
		for _, g := range e.Guards {
			if !validIfname(g.Iface) || g.Priority < guardBlockFirst || g.Priority > guardBlockLast {
				return fmt.Errorf("guard %+v is not tlab's", g)
			}
		}
	}
	return nil
}

// validIfname tells whether s can name a network interface (the kernel's
// dev_valid_name) and is none of the sysctl directories that are no
// interface ("all", "default").
func validIfname(s string) bool {
	if s == "" || len(s) >= unix.IFNAMSIZ || s == "." || s == ".." || s == "all" || s == "default" {
		return false
	}
	for _, c := range []byte(s) {
		if c == '/' || c == ':' || c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// existingIfname tells whether s is a valid name of an interface of the
// calling thread's namespace.
func existingIfname(s string) bool {
	if !validIfname(s) {
		return false
	}
	_, err := net.InterfaceByName(s)
	return err == nil
}

// procUID reads the real uid of a process from /proc/PID/status.
func procUID(pid int) (uint32, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			uid, err := strconv.ParseUint(f[0], 10, 32)
			return uint32(uid), err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no Uid line", pid)
}

// killOwned kills p only if it is still the recorded process (same start
// time) and belongs to owner. The process is pinned by a pidfd first, so
// that a PID reused after the checks is never the one signalled.
func killOwned(p proc, owner uint32) error {
	pidfd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil {
		return err
	}
	defer unix.Close(pidfd)
	if !p.alive() {
		return os.ErrNotExist // gone, or another process now has its PID
	}
	uid, err := procUID(p.PID)
	if err != nil {
		return err
	}
	if uid != owner {
		return fmt.Errorf("process %d belongs to uid %d, not to the run's owner %d: left alone", p.PID, uid, owner)
	}
	return unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
}

// removeTempDir removes a dead run's temp directory if it is a directory
// of owner, reached without links, whose parent nobody else can change.
func removeTempDir(path string, owner uint32) error {
	parent := filepath.Dir(path)
	if err := checkAncestors(parent, owner); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	root, err := os.OpenRoot(parent)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Lstat(filepath.Base(path))
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("%s: not a directory", path)
	}
	if st.Uid != owner {
		return fmt.Errorf("%s: owned by uid %d, not by the run's owner %d: left alone", path, st.Uid, owner)
	}
	return root.RemoveAll(filepath.Base(path))
}

// writeSysctl writes /proc/sys/KEY for the calling thread's namespace,
// through a root at /proc/sys that no ".." or link can leave.
func writeSysctl(key, value string) error {
	root, err := os.OpenRoot("/proc/sys")
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.OpenFile(key, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	return errors.Join(err, f.Close())
}

// readSysctl reads /proc/sys/KEY for the calling thread's namespace (see
// writeSysctl).
func readSysctl(key string) (string, error) {
	root, err := os.OpenRoot("/proc/sys")
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := root.Open(key)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	return strings.TrimSpace(string(b)), err
}

// openLockFile opens (creating) name in the checked directory dir without
// following a link.
func openLockFile(dir, name string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
}
