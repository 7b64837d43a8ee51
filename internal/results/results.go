// Package results owns what a run leaves behind: records (one row per
// measured event), summaries (one row per cell), the manifest, and the
// layout of a run directory, with a format version. It is a leaf: it
// imports nothing of tlab's but package untrusted (the opener of files
// from elsewhere), so that the report, external tools and later versions
// can read a run without the code that made it.
package results

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// FormatVersion is the version of the run-directory format this tlab
// writes. Version 1 (before it was recorded) had the same files; version 2
// adds the format and the swept keys to the manifest and keeps summary
// columns in order. Readers accept every version up to this one.
const FormatVersion = 2

// Layout of a run directory:
//
//	scenario.yaml          the scenario as run (overrides applied)
//	manifest.json          tool, machine, sysctls, seeds, calibration, format
//	cells/ID/records.csv   the cell's records, appended and flushed as they come
//	cells/ID/summary.json  the cell's summary row
//	cells/ID/DONE          written last: the cell is whole
//	summary.json, .csv     every finished cell, rewritten after each one
//	records.csv            every finished cell's records, joined at the end
//	report.html, plots/    the report
const (
	ScenarioFile = "scenario.yaml"
	ManifestFile = "manifest.json"
	CellsDir     = "cells"
	DoneFile     = "DONE"
	RecordsFile  = "records.csv"
	SummaryJSON  = "summary.json"
	SummaryCSV   = "summary.csv"
)

// MaxScenarioFile bounds what is read of a scenario file (one given to
// tlab run, or a run directory's scenario.yaml): the presets are a few
// KiB of YAML; 1 MiB leaves room for long descriptions and stacks.
const MaxScenarioFile = 1 << 20

// Param is one swept field's value in a cell: Key is the field's dotted
// path in the scenario ("workload.interval"), Value as written there.
type Param struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// SafeName turns any label (a profile stack, a cell name) into a file or
// directory name: letters, digits, '-', '_', '=' and '.' stay, anything
// else becomes '-'. It is the one sanitiser of file names in tlab (cell
// directories of format 1 were named the same way, so resuming them finds
// their cells).
func SafeName(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '=', r == '.':
			return r
		}
		return '-'
	}, s)
	if s == "." || s == ".." {
		return "-"
	}
	return s
}

// WriteAtomic writes a file through a temporary one in the same directory
// and renames it into place, so that a reader (or a crash) never sees half
// a file. Every error, of writing, syncing or closing, is returned. It is
// WriteAtomicIn on path's directory.
func WriteAtomic(path string, fill func(io.Writer) error) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer root.Close()
	return WriteAtomicIn(root, filepath.Base(path), fill)
}

// WriteAtomicIn writes name inside root (a results directory) as
// WriteAtomic does, trusting nothing else in the directory: a link or a
// name that leads out of root is refused (os.Root), the temporary file is
// created new (O_EXCL|O_NOFOLLOW), its mode and owner are set on the open
// file, never by name, and the rename replaces whatever name was (a link
// planted there is replaced, not written through). Run as root, the file
// takes the owner of the directory it lands in, so that a user's results
// stay theirs to remove.
func WriteAtomicIn(root *os.Root, name string, fill func(io.Writer) error) error {
	return atomicWriter{}.write(root, name, fill)
}

// atomicWriter holds WriteAtomicIn's one test seam: afterSync runs
// between the temporary file's fsync and the setting of its mode, where a
// watcher in the directory would swap the file for a link.
type atomicWriter struct {
	afterSync func(tmpName string)
}

func (aw atomicWriter) write(root *os.Root, name string, fill func(io.Writer) error) error {
	shown := filepath.Join(root.Name(), name)
	dir, base := filepath.Split(name)
	tmpName := dir + "." + base + "." + rand.Text()[:12] + ".tmp"
	tmp, err := root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			root.Remove(tmpName)
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err := fill(bw); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if aw.afterSync != nil {
		aw.afterSync(tmpName)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if err := chownToDir(root, tmp, filepath.Dir(name)); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if err := root.Rename(tmpName, name); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	ok = true
	return nil
}

// chownToDir gives f, created by root, the owner of the directory dir
// (inside root) it is in. Another user cannot have a file made theirs
// this way: a directory they own is theirs to fill anyway.
func chownToDir(root *os.Root, f *os.File, dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	st, err := root.Stat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid == 0 && sys.Gid == 0 {
		return nil
	}
	return f.Chown(int(sys.Uid), int(sys.Gid))
}

// WriteFileAtomic is WriteAtomic for bytes already in memory.
func WriteFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// MkdirIn makes the directory name inside root (a results directory) if
// it is missing, refusing a name that is there as anything but a
// directory: a link planted in its place (plots -> elsewhere) is not
// followed. Run as root, a new directory takes the owner of its parent,
// as WriteAtomicIn's files do.
func MkdirIn(root *os.Root, name string) error {
	shown := filepath.Join(root.Name(), name)
	if parent := filepath.Dir(name); parent != "." {
		if err := MkdirIn(root, parent); err != nil {
			return err
		}
	}
	err := root.Mkdir(name, 0o755)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	st, lerr := root.Lstat(name)
	if lerr != nil {
		return lerr
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: not a directory (%s), not written through", shown, st.Mode().Type())
	}
	if err != nil { // it was there already
		return nil
	}
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := chownToDir(root, d, filepath.Dir(name)); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	return nil
}
