package testbed

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A hostile local user (uid nobody) plants run records where root's
// tlab cleanup (and every root run's sweep) might read them. Each record
// tries one thing the issue found root did for it. The cleanup runs in a
// child in a network namespace of its own, so that what a record makes it
// do to nftables and forwarding happens there and never to the machine.

const (
	nobody            = 65534
	hostileCleanupEnv = "TLAB_TEST_HOSTILE_CLEANUP"
)

// hostileLayout names what the test plants and watches under base (the
// child's TMPDIR).
type hostileLayout struct{ base string }

func (l hostileLayout) registry() string { return filepath.Join(l.base, "tlab-runs-65534") }
func (l hostileLayout) rootsOwn() string { return filepath.Join(l.base, "tlab-runs-0") }
func (l hostileLayout) secret() string   { return filepath.Join(l.base, "secret") }
func (l hostileLayout) linkDir() string  { return filepath.Join(l.base, "linkdir") }
func (l hostileLayout) created() string  { return filepath.Join(l.base, "rootcreated") }
func (l hostileLayout) oddDir() string   { return filepath.Join(l.base, "tlab-victim") }
func (l hostileLayout) namedDir() string {
	return filepath.Join(l.base, "tlab-20250101T000000-deadbeef")
}
func (l hostileLayout) rootsOwnDir() string {
	return filepath.Join(l.base, "tlab-20250101T000001-deadbeef")
}

// plant writes r as a file of nobody's in dir.
func plant(dir, name string, r any) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return err
	}
	return os.Chown(p, nobody, nobody)
}

// deadProc is a process that existed and is gone.
func deadProc() (proc, error) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		return proc{}, err
	}
	p, err := procOf(cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	return p, err
}

// hostileChildState is what the child saw of its namespace after the
// cleanup.
type hostileChildState struct {
	Tables  string   `json:"tables"`
	IPv4All string   `json:"ipv4_all"`
	IPv6All string   `json:"ipv6_all"`
	Actions []string `json:"actions"`
	Err     string   `json:"err,omitempty"`
}

// hostileCleanupChild runs in its own network namespace: it makes two
// tables (filter, canary), plants the records that need its namespace's
// inode (the egress ones), runs the cleanup the mode names and prints
// what became of the namespace.
func hostileCleanupChild(mode string) {
	l := hostileLayout{os.Getenv("TMPDIR")}
	st := hostileChildState{}
	fail := func(err error) {
		st.Err = err.Error()
		json.NewEncoder(os.Stdout).Encode(st)
		os.Exit(0)
	}
	if out, err := exec.Command("nft", "add table ip filter; add table ip canary").CombinedOutput(); err != nil {
		fail(fmt.Errorf("nft: %v: %s", err, out))
	}
	ns, err := currentNetNS()
	if err != nil {
		fail(err)
	}
	owner, err := deadProc()
	if err != nil {
		fail(err)
	}
	up := strings.Repeat("../", 5) + strings.TrimPrefix(l.linkDir(), "/")
	egress := map[string]*egressRecord{
		// Climb out of /proc/sys to a link to a root-owned file.
		"traversal": {NetNS: ns, Table: "tlab_00000001", Veth: "tlx00000001", Forwarding: map[string]string{up: "1"}},
		// Empty the whole firewall through nft's parser.
		"flush": {NetNS: ns, Table: "filter; flush ruleset", Veth: "tlx00000002"},
		// Turn the machine into a router, IPv4 and IPv6.
		"forward": {NetNS: ns, Table: "tlab_00000003", Veth: "tlx00000003", Forwarding: map[string]string{"all": "1", "../../ipv6/conf/all": "1"}},
		// Valid: its undo takes the lock, whose name is nobody's link.
		"lock": {NetNS: ns, Table: "tlab_00000004", Veth: "tlx00000004"},
	}
	for name, e := range egress {
		r := &runRecord{ID: "20250101T000000-0000000" + e.Veth[len(e.Veth)-1:], Owner: owner, Started: time.Now(), Egress: e}
		if err := plant(l.registry(), name+".json", r); err != nil {
			fail(err)
		}
	}
	var actions []CleanupAction
	switch mode {
	case "root":
		actions, err = Cleanup(false)
	case "own":
		// As the user's own tlab would read its own registry (with
		// the guide's setcap): the registry passes, the records must not.
		actions, err = cleanupDir(registry{l.registry(), nobody}, false)
	}
	if err != nil {
		fail(err)
	}
	for _, a := range actions {
		st.Actions = append(st.Actions, fmt.Sprintf("%s: %s (done %v) %s", a.Run, a.What, a.Done, a.Error))
	}
	out, _ := exec.Command("nft", "list", "tables").CombinedOutput()
	st.Tables = string(out)
	st.IPv4All, _ = readSysctl("net/ipv4/conf/all/forwarding")
	st.IPv6All, _ = readSysctl("net/ipv6/conf/all/forwarding")
	json.NewEncoder(os.Stdout).Encode(st)
	os.Exit(0)
}

// plantHostileRegistry lays out what nobody plants before the cleanup
// and returns a root process that must survive it.
func plantHostileRegistry(t *testing.T, l hostileLayout) *exec.Cmd {
	t.Helper()
	for _, d := range []string{l.registry(), l.rootsOwn(), l.linkDir()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{l.oddDir(), l.namedDir(), l.rootsOwnDir()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(l.secret(), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(l.secret(), filepath.Join(l.linkDir(), "forwarding")); err != nil {
		t.Fatal(err)
	}
	// Root creates its lock file through this link.
	if err := os.Symlink(l.created(), filepath.Join(l.registry(), "egress.lock")); err != nil {
		t.Fatal(err)
	}
	victim := exec.Command("sleep", "120")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Process.Kill(); victim.Wait() })
	vp, err := procOf(victim.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := deadProc()
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]*runRecord{
		// Kill a root process: its PID and start time are world-readable.
		"kill.json": {ID: "20250101T000000-0000000a", Owner: owner, Children: []proc{vp}},
		// Remove a root directory whose name holds "tlab-".
		"odd.json": {ID: "20250101T000000-0000000b", Owner: owner, TempDir: l.oddDir(), Kind: kindDir},
		// Remove a root directory named as tlab names its own.
		"named.json": {ID: "20250101T000000-0000000c", Owner: owner, TempDir: l.namedDir(), Kind: kindDir},
	}
	for name, r := range records {
		if err := plant(l.registry(), name, r); err != nil {
			t.Fatal(err)
		}
	}
	// Root's own per-user registry, made first by nobody.
	r := &runRecord{ID: "20250101T000001-0000000d", Owner: owner, TempDir: l.rootsOwnDir(), Kind: kindDir}
	if err := plant(l.rootsOwn(), "mine.json", r); err != nil {
		t.Fatal(err)
	}
	return victim
}

// runHostileCleanup plants, runs the child in a namespace of its own and
// checks that nothing the records asked for happened.
func runHostileCleanup(t *testing.T, mode string) {
	if os.Geteuid() != 0 || HostUID() != 0 {
		t.Skip("needs the machine's root: the hostile records target root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nftables' nft to plant the tables a record would flush")
	}
	l := hostileLayout{t.TempDir()}
	victim := plantHostileRegistry(t, l)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env := []string{hostileCleanupEnv + "=" + mode, "TMPDIR=" + l.base}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TMPDIR=") && !strings.HasPrefix(e, "XDG_RUNTIME_DIR=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	// The child's own network namespace: whatever a record makes it do
	// to nftables or forwarding stays there.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var st hostileChildState
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("child said %q: %v", out, err)
	}
	if st.Err != "" {
		t.Fatalf("child: %s", st.Err)
	}
	t.Logf("cleanup did:\n%s", strings.Join(st.Actions, "\n"))

	if !strings.Contains(st.Tables, "canary") || !strings.Contains(st.Tables, "filter") {
		t.Errorf("a record's table name emptied or changed the firewall: tables now %q", st.Tables)
	}
	if st.IPv4All != "0" || st.IPv6All != "0" {
		t.Errorf("a record turned forwarding on: ipv4 all %q, ipv6 all %q", st.IPv4All, st.IPv6All)
	}
	if b, err := os.ReadFile(l.secret()); err != nil || string(b) != "secret\n" {
		t.Errorf("a forwarding key climbed out of /proc/sys: the root-owned file now holds %q (%v)", b, err)
	}
	if _, err := os.Lstat(l.created()); err == nil {
		t.Errorf("root created a file through the registry's egress.lock link")
	}
	// The victim is the test's child: killed, it would linger as a
	// zombie ("Z" in /proc/PID/stat) until waited for.
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", victim.Process.Pid)); err != nil || strings.Contains(string(stat), ") Z ") {
		t.Errorf("a record made root kill its process %d (%v)", victim.Process.Pid, err)
	}
	for _, d := range []string{l.oddDir(), l.namedDir(), l.rootsOwnDir()} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("a record made root remove %s: %v", d, err)
		}
	}
}

// TestRootReadsNoOtherUsersRegistry: root's cleanup (and each root run's
// sweep) reads no registry of another user's, nor one of its own that
// another user made first; every hostile record of nobody's is left alone.
func TestRootReadsNoOtherUsersRegistry(t *testing.T) {
	runHostileCleanup(t, "root")
}

// TestOwnRegistryRecordsAreChecked: in a registry its own user may read
// (here nobody's, as nobody's own tlab with the guide's setcap would), a
// record still does nothing that is not tlab's: no process of another
// user killed, no directory of another user removed, no table but a
// tlab_ one, no forwarding key that is not an interface, no lock file
// through a link.
func TestOwnRegistryRecordsAreChecked(t *testing.T) {
	runHostileCleanup(t, "own")
}

// TestRegistryDirIsCheckedAsStrictModes: each way another user could
// have a hand in a registry refuses it.
func TestRegistryDirIsCheckedAsStrictModes(t *testing.T) {
	if os.Geteuid() != 0 || HostUID() != 0 {
		t.Skip("needs the machine's root to make files of another user's")
	}
	base := t.TempDir()
	mk := func(name string, mode os.FileMode, uid int) string {
		p := filepath.Join(base, name)
		if err := os.Mkdir(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := mk("tlab-runs-0", 0o755, 0)
	if _, err := checkRegistryDir(good); err != nil {
		t.Fatalf("root's own registry refused: %v", err)
	}
	bad := map[string]string{
		"another user's":             mk("theirs", 0o755, nobody),
		"group-writable":             mk("groupw", 0o775, 0),
		"world-writable":             mk("worldw", 0o1777, 0),
		"named for another uid":      mk("tlab-runs-1000", 0o755, 0),
		"under another user's dir":   filepath.Join(mk("parent", 0o755, nobody), "tlab"),
		"under a world-writable dir": filepath.Join(mk("openparent", 0o777, 0), "tlab"),
	}
	for _, p := range []string{bad["under another user's dir"], bad["under a world-writable dir"]} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	bad["a link"] = link
	for why, p := range bad {
		if _, err := checkRegistryDir(p); err == nil {
			t.Errorf("%s registry %s was trusted", why, p)
		}
	}
}

// TestRecordFieldsAreTlabs: a record whose fields are not what tlab
// writes is refused as a whole.
func TestRecordFieldsAreTlabs(t *testing.T) {
	valid := func() *runRecord {
		return &runRecord{ID: "20250101T000000-0123abcd", Owner: proc{PID: 1234, Start: 5},
			TempDir: "/tmp/tlab-20250101T000000-0123abcd", Children: []proc{{PID: 1235}},
			Egress: &egressRecord{Table: "tlab_0123abcd", Veth: "tlx0123abcd", Forwarding: map[string]string{"eth0": "0"}}}
	}
	if err := valid().validate(); err != nil {
		t.Fatalf("tlab's own record refused: %v", err)
	}
	for why, spoil := range map[string]func(r *runRecord){
		"nft table with a command":   func(r *runRecord) { r.Egress.Table = "filter; flush ruleset" },
		"nft table of another":       func(r *runRecord) { r.Egress.Table = "filter" },
		"veth not tlab's":            func(r *runRecord) { r.Egress.Veth = "eth0" },
		"forwarding key climbing":    func(r *runRecord) { r.Egress.Forwarding = map[string]string{"../../../x": "0"} },
		"forwarding key all":         func(r *runRecord) { r.Egress.Forwarding = map[string]string{"all": "0"} },
		"forwarding key ipv6":        func(r *runRecord) { r.Egress.Forwarding = map[string]string{"../../ipv6/conf/all": "1"} },
		"forwarding value":           func(r *runRecord) { r.Egress.Forwarding = map[string]string{"eth0": "pwned"} },
		"temp dir not tlab's":        func(r *runRecord) { r.TempDir = "/etc/tlab-x" },
		"temp dir relative":          func(r *runRecord) { r.TempDir = "tlab-20250101T000000-0123abcd" },
		"temp dir climbing":          func(r *runRecord) { r.TempDir = "/tmp/../etc/tlab-20250101T000000-0123abcd" },
		"child pid 1":                func(r *runRecord) { r.Children = []proc{{PID: 1}} },
		"child pid -1 (every one)":   func(r *runRecord) { r.Children = []proc{{PID: -1}} },
		"owner pid 0":                func(r *runRecord) { r.Owner.PID = 0 },
		"label with a terminal code": func(r *runRecord) { r.Label = "\x1b]0;pwned\x07" },
		"kind unknown":               func(r *runRecord) { r.Kind = "x" },
		"id not tlab's":              func(r *runRecord) { r.ID = "../../x" },
	} {
		r := valid()
		spoil(r)
		if err := r.validate(); err == nil {
			t.Errorf("%s: record accepted", why)
		}
	}
}

// TestSysctlKeysStayInProcSys: a key that climbs out of /proc/sys is
// refused by the root the write goes through, whatever let it that far.
func TestSysctlKeysStayInProcSys(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "forwarding")
	if err := os.WriteFile(target, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := "net/ipv4/conf/" + strings.Repeat("../", 5) + strings.TrimPrefix(dir, "/") + "/forwarding"
	if err := writeSysctl(key, "1"); err == nil {
		t.Errorf("writeSysctl(%q) wrote outside /proc/sys", key)
	}
	if b, _ := os.ReadFile(target); string(b) != "secret\n" {
		t.Errorf("the file outside /proc/sys now holds %q", b)
	}
}

// TestKillOnlyTheOwnersProcess: a live process of another user is not
// killed for a registry of nobody's; one of nobody's is.
func TestKillOnlyTheOwnersProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process of nobody's")
	}
	start := func(cred *syscall.Credential) (*exec.Cmd, proc) {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		p, err := procOf(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		return cmd, p
	}
	_, roots := start(nil)
	theirs, nobodys := start(&syscall.Credential{Uid: nobody, Gid: nobody})
	if err := killOwned(roots, nobody); err == nil {
		t.Errorf("root's process %d killed for nobody's record", roots.PID)
	}
	if err := killOwned(proc{PID: nobodys.PID, Start: nobodys.Start + 1}, nobody); err == nil {
		t.Errorf("a process whose start time differs from the record's was killed")
	}
	if err := killOwned(nobodys, nobody); err != nil {
		t.Errorf("nobody's own process not killed: %v", err)
	}
	theirs.Wait()
	if theirs.ProcessState == nil || theirs.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("nobody's process was not killed: %v", theirs.ProcessState)
	}
}

// TestRecordFilesAreChecked: in a trusted registry, a record is read only
// from a regular file of the registry's owner that nobody else can
// write, reached without a link, and only up to a bound.
func TestRecordFilesAreChecked(t *testing.T) {
	if os.Geteuid() != 0 || HostUID() != 0 {
		t.Skip("needs the machine's root to make files of another user's")
	}
	dir := filepath.Join(t.TempDir(), "tlab-runs-0")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&runRecord{ID: "20250101T000000-0123abcd", Owner: proc{PID: 1234, Start: 5}})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, mode os.FileMode, uid int, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("good.json", 0o644, 0, b)
	write("nobodys.json", 0o644, nobody, b)
	write("groupw.json", 0o664, 0, b)
	write("huge.json", 0o644, 0, append(b, make([]byte, maxRecordSize)...))
	outside := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(outside, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A writer that never writes: a read of the FIFO would wait forever.
	writer, err := os.OpenFile(filepath.Join(dir, "fifo.json"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	done := make(chan struct{})
	var records map[string]*runRecord
	var refused map[string]error
	go func() {
		defer close(done)
		records, refused, err = registryRecords(registry{dir, 0})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading the registry hangs (on the FIFO?)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := records["good.json"]; !ok || len(records) != 1 {
		t.Errorf("records read: %v; want good.json alone", records)
	}
	for _, name := range []string{"nobodys.json", "groupw.json", "huge.json", "link.json", "fifo.json"} {
		if refused[name] == nil {
			t.Errorf("%s was not refused", name)
		}
	}
}

// TestOwnLabelsPassTheCheck: whatever label a run is given, the record
// tlab writes for it passes validate (else the run's leftovers would
// never be cleaned).
func TestOwnLabelsPassTheCheck(t *testing.T) {
	for _, label := range []string{"plain", "tab\there", "line\nbreak\x1b[31m", strings.Repeat("é", 5000)} {
		r := &runRecord{ID: "20250101T000000-0123abcd", Owner: proc{PID: 1234}, Label: recordLabel(label)}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeRecord(b); err != nil {
			t.Errorf("label %.20q: tlab's own record refused: %v", label, err)
		}
	}
}
