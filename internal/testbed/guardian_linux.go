package testbed

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// An egress's guardian is a process of its own that outlives a killed
// run: the run holds the write end of a pipe whose read end is the
// guardian's stdin. When the run dies, however it dies, the kernel closes
// the write end; the guardian reads EOF and, if the run's record still
// names an egress and its owner is gone, undoes it at once (as tlab
// cleanup would), instead of leaving forwarding on until someone cleans
// up. A run that closes its egress itself closes the pipe afterwards, and
// the guardian finds nothing to do. It is in a session of its own, so
// that a terminal's Ctrl-C, which the run handles, does not reach it; it
// is not one of the run's recorded children, which cleanup kills.

// guardianPatience is how long the guardian waits, after the pipe
// closed, for the run's process to be gone.
const guardianPatience = 10 * time.Second

// guardianEnv names the record whose egress the process guards.
const guardianEnv = "TLAB_EGRESS_GUARDIAN"

// Every binary that can make an egress imports this package, so each can
// be its guardian: the check runs before main (or TestMain) and never
// returns when the environment asks for the guardian.
func init() {
	if path := os.Getenv(guardianEnv); path != "" {
		os.Exit(runGuardian(path, os.Stdin))
	}
}

// startGuardian starts the guardian of the egress recorded at
// recordPath and returns the pipe's write end, which the run keeps open
// while the egress lives.
func startGuardian(recordPath string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// "-test.run=^$": a test binary without tests to run, should it not
	// know the environment variable; tlab itself never reads it.
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), guardianEnv+"="+recordPath)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("egress guardian: %w", err)
	}
	go cmd.Wait() // reaped if the run outlives it
	return w, nil
}

// runGuardian waits for EOF on stdin, then undoes the egress of the
// record at path if its run died without doing so. It returns the exit
// code.
func runGuardian(path string, stdin io.Reader) int {
	io.Copy(io.Discard, stdin)
	dir := filepath.Dir(path)
	owner, err := checkRegistryDir(dir)
	if err != nil || owner != uint32(os.Geteuid()) {
		return 1
	}
	// The pipe closes while the kernel tears the run down, before its
	// process is a zombie: wait a little for the owner to be gone.
	var r *runRecord
	for deadline := time.Now().Add(guardianPatience); ; time.Sleep(50 * time.Millisecond) {
		records, _, err := registryRecords(registry{dir, owner})
		if err != nil {
			return 1
		}
		r = records[filepath.Base(path)]
		if r == nil || r.Egress == nil {
			return 0 // closed by the run itself
		}
		if !r.Owner.alive() {
			break
		}
		if time.Now().After(deadline) {
			return 0 // the run lives on: not for the guardian
		}
	}
	if err := cleanupEgress(dir, r); err != nil {
		return 1 // left for tlab cleanup
	}
	// Undone: the record keeps the rest (temp dir, children) for tlab
	// cleanup, which would otherwise undo the egress again.
	r.Egress = nil
	if r.save() != nil {
		return 1
	}
	return 0
}
