package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// liveSocketSuffix names a run's control socket beside its record in the
// run registry: ID.sock (`tlab link set`).
const liveSocketSuffix = ".sock"

// serveLive opens the run's control socket for live link changes. A run
// whose socket cannot be made (a registry path too long for a socket
// address) runs on without live control: tlab link set then says it
// finds no socket.
func (tb *Testbed) serveLive() {
	if tb.emu == nil || tb.run == nil {
		return
	}
	var names []string
	for _, l := range tb.Topo.Links {
		names = append(names, l.Name)
	}
	path := strings.TrimSuffix(tb.run.path, ".json") + liveSocketSuffix
	if stop, err := tb.emu.ServeLive(path, names); err == nil {
		tb.onClose(stop)
	}
}

// LiveSocket returns the control socket of the live run id (its run ID
// as the registry names it), or of the only live run with one when id is
// empty. Only trusted registries are read (trust.go), and the socket must
// belong to the registry's owner.
func LiveSocket(id string) (string, error) {
	if id != "" && !runIDName.MatchString(id) {
		return "", fmt.Errorf("run %q: not a run ID (20060102T150405-1a2b3c4d)", id)
	}
	regs, refused := trustedRegistries()
	var found []string
	for _, reg := range regs {
		names, err := os.ReadDir(reg.dir)
		if err != nil {
			continue
		}
		// A socket is a live run's when its record is and its process
		// lives: a killed run's socket stays until tlab cleanup.
		records, _, _ := registryRecords(reg)
		for _, e := range names {
			name := e.Name()
			if !strings.HasSuffix(name, liveSocketSuffix) || (id != "" && name != id+liveSocketSuffix) {
				continue
			}
			rec := records[strings.TrimSuffix(name, liveSocketSuffix)+".json"]
			if rec == nil || rec.Kind == kindDir || !rec.Owner.alive() {
				continue
			}
			path := filepath.Join(reg.dir, name)
			var st unix.Stat_t
			if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Uid != reg.owner {
				continue
			}
			found = append(found, path)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		var ids []string
		for _, f := range found {
			ids = append(ids, strings.TrimSuffix(filepath.Base(f), liveSocketSuffix))
		}
		return "", fmt.Errorf("%d live runs: name one with --run (%s)", len(found), strings.Join(ids, ", "))
	case id != "":
		return "", errors.Join(fmt.Errorf("no live run %s with a control socket", id), errors.Join(refused...))
	}
	return "", errors.Join(errors.New("no live run with a control socket: start one (tlab run, tlab shell) first"), errors.Join(refused...))
}

// fileExists tells whether path names anything, not following a link.
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
