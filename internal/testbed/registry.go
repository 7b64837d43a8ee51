package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RegistryDir holds one record per live run. It lives on a tmpfs (/run), so
// a reboot, which also frees every namespace, clears it too. A process that
// cannot write there (an unprivileged user in a user namespace) uses
// userRegistryDir instead.
const RegistryDir = "/run/tlab"

// userRegistryDir is the fallback registry of the current user, named by
// the user's uid outside any user namespace: inside the one tlab makes for
// an unprivileged user every user is uid 0, and two users would otherwise
// share (and fight over) one directory.
func userRegistryDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "tlab")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("tlab-runs-%d", HostUID()))
}

// HostUID returns the calling user's uid in the initial user namespace:
// os.Getuid() mapped back through /proc/self/uid_map (whose lines read
// "inside outside count"). Outside a user namespace the map is the
// identity and the two agree.
func HostUID() int {
	uid := os.Getuid()
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return uid
	}
	return hostID(string(b), uid)
}

// hostID maps id through a uid_map's text.
func hostID(uidMap string, id int) int {
	for _, line := range strings.Split(uidMap, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.Atoi(f[0])
		out, err2 := strconv.Atoi(f[1])
		n, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil && id >= in && int64(id-in) < n {
			return out + (id - in)
		}
	}
	return id
}

// registryDirs lists where run records may be, preferred first: the
// machine's (root's) and this user's own. Another user's registry is
// never read, root's neither: what a record says is acted on with this
// process's rights (checkRegistryDir).
func registryDirs() []string {
	if os.Geteuid() == 0 && HostUID() == 0 {
		// The machine's root always can write /run/tlab: a per-user
		// directory (a sudo-kept XDG_RUNTIME_DIR, a /tmp/tlab-runs-0
		// someone made first) would only be one more to check.
		return []string{RegistryDir}
	}
	return []string{RegistryDir, userRegistryDir()}
}

// registry is a run registry that passed checkRegistryDir.
type registry struct {
	dir   string
	owner uint32
}

// trustedRegistries returns the registries that exist and may be read,
// and why any other that exists may not.
func trustedRegistries() ([]registry, []error) {
	var out []registry
	var refused []error
	for _, d := range registryDirs() {
		if _, err := os.Lstat(d); os.IsNotExist(err) {
			continue
		}
		owner, err := checkRegistryDir(d)
		if err != nil {
			refused = append(refused, err)
			continue
		}
		out = append(out, registry{d, owner})
	}
	return out, refused
}

// writableRegistry returns the first registry directory of this
// process's own user that it can write to, creating it if needed. A
// directory someone else made or can write to is refused.
func writableRegistry() (string, error) {
	var errs []error
	for _, d := range registryDirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		owner, err := checkRegistryDir(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if owner != uint32(os.Geteuid()) {
			continue // root's, read but not written by a user
		}
		f, err := os.CreateTemp(d, ".probe-*")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		f.Close()
		os.Remove(f.Name())
		return d, nil
	}
	return "", fmt.Errorf("run registry: no writable directory: %w", errors.Join(errs...))
}

// proc identifies a process across PID reuse by its start time.
type proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	// state is the process's state letter when read (not recorded).
	state byte
}

// runRecord is what a run leaves for `tlab cleanup` in case it is killed
// before it can clean up after itself.
type runRecord struct {
	ID      string    `json:"id"`
	Owner   proc      `json:"owner"`
	Started time.Time `json:"started"`
	TempDir string    `json:"temp_dir"`
	Label   string    `json:"label,omitempty"`
	// Kind is empty for a testbed's record and "dir" for a temporary
	// directory alone (MakeTempDir), which is no live testbed.
	Kind string `json:"kind,omitempty"`
	// Children are processes started in the run's namespaces (the
	// emulator, servers) that must not outlive it.
	Children []proc `json:"children"`
	// Egress is what the run changed outside its namespaces to reach a
	// real path (egress_linux.go).
	Egress *egressRecord `json:"egress,omitempty"`

	mu   sync.Mutex
	path string
}

func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// register records a new run and creates its temp directory, in that
// order: the record names the directory before it exists, so a run killed
// between the two leaves a record that tlab cleanup (and the next run)
// acts on, never a directory nobody knows of.
func register(id, label string) (*runRecord, error) {
	return registerDir(id, label, "", filepath.Join(os.TempDir(), "tlab-"+id))
}

// registerDir records a run of kind whose temp directory is tmp, then
// makes the directory (see register).
func registerDir(id, label, kind, tmp string) (*runRecord, error) {
	dir, err := writableRegistry()
	if err != nil {
		return nil, err
	}
	self, err := procOf(os.Getpid())
	if err != nil {
		return nil, err
	}
	// The run ID is random and already unique: the directory is named by
	// it rather than by MkdirTemp, whose name is known only afterwards.
	label = recordLabel(label)
	r := &runRecord{ID: id, Owner: self, Started: time.Now(), TempDir: tmp, Label: label, Kind: kind, path: filepath.Join(dir, id+".json")}
	if err := r.save(); err != nil {
		return nil, err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		os.Remove(r.path)
		return nil, fmt.Errorf("run temp dir: %w", err)
	}
	return r, nil
}

// recordLabel is label as a record keeps it: it is shown to other runs'
// users, so no control characters (validate refuses them), and bounded.
func recordLabel(label string) string {
	label = strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return '?'
		}
		return c
	}, label)
	if len(label) > 4000 {
		label = strings.ToValidUTF8(label[:4000], "")
	}
	return label
}

func (r *runRecord) save() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	// The registry is checked (writableRegistry): only this user can
	// have put anything at the temporary name; O_NOFOLLOW all the same.
	tmp := r.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("run registry: %w", err)
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("run registry: %w", err)
	}
	return os.Rename(tmp, r.path)
}

// addPID records a child process of the run.
func (r *runRecord) addPID(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, err := procOf(pid); err == nil {
		r.Children = append(r.Children, p)
		r.save()
	}
}

// remove deletes the temp directory and the record: the run ended cleanly.
func (r *runRecord) remove() error {
	err := os.RemoveAll(r.TempDir)
	if rerr := os.Remove(r.path); rerr != nil && !os.IsNotExist(rerr) {
		err = errors.Join(err, rerr)
	}
	return err
}

// procOf reads a process's start time (field 22 of /proc/PID/stat).
func procOf(pid int) (proc, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return proc{}, err
	}
	// The command name (field 2) may hold spaces; fields after it follow
	// the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return proc{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return proc{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return proc{}, err
	}
	return proc{PID: pid, Start: start, state: fields[0][0]}, nil
}

// alive tells whether the recorded process still runs (same PID, same
// start): a zombie (Z) or dead (X) one, which its parent has not reaped
// yet, does not.
func (p proc) alive() bool {
	now, err := procOf(p.PID)
	return err == nil && now.Start == p.Start && now.state != 'Z' && now.state != 'X'
}

// CleanupAction is one thing `tlab cleanup` removed, or would remove.
type CleanupAction struct {
	Run    string `json:"run"`
	What   string `json:"what"`
	Done   bool   `json:"done"`
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Cleanup removes what runs whose tlab process is gone left behind: their
// child processes, temp directories and records. Live runs are left alone.
// It touches nothing that is not in the registry, reads only this user's
// own registries (root: the machine's), and acts on a record only as far
// as its fields are what tlab writes and name what the registry's owner
// owns.
func Cleanup(dryRun bool) ([]CleanupAction, error) {
	var actions []CleanupAction
	regs, refused := trustedRegistries()
	for _, err := range refused {
		actions = append(actions, CleanupAction{Run: "-", What: "read the run registry", Error: "refused: " + err.Error()})
	}
	for _, reg := range regs {
		if reg.owner != uint32(os.Geteuid()) {
			continue // root's registry, seen by a user: root cleans it
		}
		a, err := cleanupDir(reg, dryRun)
		if err != nil {
			return actions, err
		}
		actions = append(actions, a...)
	}
	return actions, nil
}

// registryRecords reads the records of a checked registry: each file
// opened without following links and checked (readRecordFile), each
// record validated (decodeRecord). It returns the records by file name,
// and an error for each file that was refused.
func registryRecords(reg registry) (map[string]*runRecord, map[string]error, error) {
	fd, err := unix.Open(reg.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EACCES) {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("run registry %s: %w", reg.dir, err)
	}
	d := os.NewFile(uintptr(fd), reg.dir)
	defer d.Close()
	// The directory opened is the one checked: not swapped since.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Uid != reg.owner || st.Mode&0o022 != 0 {
		return nil, nil, fmt.Errorf("run registry %s changed after it was checked", reg.dir)
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, nil, fmt.Errorf("run registry %s: %w", reg.dir, err)
	}
	slices.Sort(names)
	records, refused := map[string]*runRecord{}, map[string]error{}
	for _, name := range names {
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		b, err := readRecordFile(fd, name, reg.owner)
		if err == nil {
			var r *runRecord
			if r, err = decodeRecord(b); err == nil {
				r.path = filepath.Join(reg.dir, name)
				records[name] = r
				continue
			}
		}
		if !errors.Is(err, unix.ENOENT) {
			refused[name] = err
		}
	}
	return records, refused, nil
}

func cleanupDir(reg registry, dryRun bool) ([]CleanupAction, error) {
	records, refused, err := registryRecords(reg)
	if err != nil {
		return nil, err
	}
	var actions []CleanupAction
	for _, name := range slices.Sorted(maps.Keys(refused)) {
		// Left in place: a record tlab did not write is not tlab's to
		// remove either.
		actions = append(actions, CleanupAction{Run: name, What: "refused record " + filepath.Join(reg.dir, name), Error: refused[name].Error()})
	}
	for _, name := range slices.Sorted(maps.Keys(records)) {
		r := records[name]
		path := r.path
		if r.Owner.alive() {
			continue
		}
		do := func(what string, f func() error) {
			a := CleanupAction{Run: r.ID, What: what}
			if !dryRun {
				if err := f(); err != nil && !os.IsNotExist(err) {
					a.Error = err.Error()
				} else {
					a.Done = true
				}
			}
			actions = append(actions, a)
		}
		for _, c := range r.Children {
			if c.alive() {
				do(fmt.Sprintf("kill process %d", c.PID), func() error { return killOwned(c, reg.owner) })
			}
		}
		if r.Egress != nil {
			do("remove nftables table "+r.Egress.Table+" and put forwarding back", func() error { return cleanupEgress(reg.dir, r) })
		}
		if r.TempDir != "" {
			if _, err := os.Lstat(r.TempDir); err == nil {
				do("remove "+r.TempDir, func() error { return removeTempDir(r.TempDir, reg.owner) })
			}
		}
		for _, g := range leftoverCPUGroups(r.ID) {
			do("remove cgroup "+g, func() error { return removeLeftoverGroup(g) })
		}
		if sock := strings.TrimSuffix(path, ".json") + liveSocketSuffix; fileExists(sock) {
			do("remove control socket "+sock, func() error { return os.Remove(sock) })
		}
		do("remove record "+path, func() error { return os.Remove(path) })
	}
	return actions, nil
}

// LiveRun is another process's live testbed, as the run registry has it.
type LiveRun struct {
	ID    string `json:"id"`
	PID   int    `json:"pid"`
	Label string `json:"label,omitempty"`
}

func (r LiveRun) String() string {
	if r.Label != "" {
		return fmt.Sprintf("pid %d (%s)", r.PID, r.Label)
	}
	return fmt.Sprintf("pid %d (testbed %s)", r.PID, r.ID)
}

// TempDir is a temporary directory that no kill leaves behind: it is
// recorded in the run registry before it is made, so that tlab cleanup
// (and the next run's sweep) removes it when its process died without
// removing it. An ad-hoc run's results live in one.
type TempDir struct {
	Path string
	rec  *runRecord
}

// MakeTempDir makes a temporary directory named tlab-PREFIX-ID in the
// system's temp directory.
func MakeTempDir(prefix string) (*TempDir, error) {
	id := newRunID()
	rec, err := registerDir(prefix+"-"+id, prefix, kindDir, filepath.Join(os.TempDir(), "tlab-"+prefix+"-"+id))
	if err != nil {
		return nil, err
	}
	return &TempDir{Path: rec.TempDir, rec: rec}, nil
}

// Remove deletes the directory and its record.
func (d *TempDir) Remove() error { return d.rec.remove() }

const kindDir = "dir"

// OtherLiveRuns returns the live testbeds of processes other than this
// one: they share the CPUs with this run and disturb its timing.
func OtherLiveRuns() []LiveRun {
	var out []LiveRun
	self := os.Getpid()
	for _, r := range readRecords() {
		if r.Kind != kindDir && r.Owner.PID != self && r.Owner.alive() {
			out = append(out, LiveRun{ID: r.ID, PID: r.Owner.PID, Label: r.Label})
		}
	}
	return out
}

// readRecords reads every valid run record of the trusted registries.
func readRecords() []*runRecord {
	var out []*runRecord
	regs, _ := trustedRegistries()
	for _, reg := range regs {
		records, _, _ := registryRecords(reg)
		for _, name := range slices.Sorted(maps.Keys(records)) {
			out = append(out, records[name])
		}
	}
	return out
}
