package testbed

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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

// registryDirs lists where run records may be, preferred first.
func registryDirs() []string {
	dirs := []string{RegistryDir, userRegistryDir()}
	if os.Geteuid() == 0 && HostUID() == 0 {
		// The machine's root also sees what other users' runs left (each
		// user's registry: XDG_RUNTIME_DIR/tlab or the temp directory's
		// tlab-runs-UID), so that tlab cleanup as root cleans up after
		// everyone.
		for _, pattern := range []string{"/run/user/*/tlab", filepath.Join(os.TempDir(), "tlab-runs-*")} {
			others, _ := filepath.Glob(pattern)
			for _, d := range others {
				if !slices.Contains(dirs, d) {
					dirs = append(dirs, d)
				}
			}
		}
	}
	return dirs
}

// writableRegistry returns the first registry directory this process can
// write to, creating it if needed.
func writableRegistry() (string, error) {
	var errs []error
	for _, d := range registryDirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			errs = append(errs, err)
			continue
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

func (r *runRecord) save() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
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
	return proc{PID: pid, Start: start}, nil
}

// alive tells whether the recorded process still runs (same PID, same start).
func (p proc) alive() bool {
	now, err := procOf(p.PID)
	return err == nil && now.Start == p.Start
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
// It touches nothing that is not in the registry.
func Cleanup(dryRun bool) ([]CleanupAction, error) {
	var actions []CleanupAction
	for _, dir := range registryDirs() {
		a, err := cleanupDir(dir, dryRun)
		if err != nil {
			return actions, err
		}
		actions = append(actions, a...)
	}
	return actions, nil
}

func cleanupDir(dir string, dryRun bool) ([]CleanupAction, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) || os.IsPermission(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run registry: %w", err)
	}
	var actions []CleanupAction
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r runRecord
		if err := json.Unmarshal(b, &r); err != nil {
			actions = append(actions, CleanupAction{Run: e.Name(), What: "unreadable record " + path, Error: err.Error()})
			continue
		}
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
				do(fmt.Sprintf("kill process %d", c.PID), func() error {
					p, err := os.FindProcess(c.PID)
					if err != nil {
						return err
					}
					return p.Kill()
				})
			}
		}
		if r.Egress != nil {
			do("remove nftables table "+r.Egress.Table+" and put forwarding back", func() error { return cleanupEgress(dir, &r) })
		}
		if r.TempDir != "" && strings.Contains(filepath.Base(r.TempDir), "tlab-") {
			if _, err := os.Stat(r.TempDir); err == nil {
				do("remove "+r.TempDir, func() error { return os.RemoveAll(r.TempDir) })
			}
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

// readRecords reads every run record of the registries.
func readRecords() []*runRecord {
	var out []*runRecord
	for _, dir := range registryDirs() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			r := &runRecord{}
			if json.Unmarshal(b, r) == nil {
				out = append(out, r)
			}
		}
	}
	return out
}
