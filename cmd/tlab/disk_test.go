package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const fullDiskScenario = `name: full-disk
profiles: [ethernet]
protocols: [tcp, quic, h2]
workload: {type: periodic, interval: 2ms, payload: 100}
matrix:
  workload.payload: [100, 200]
count: 600
warmup: 0s
`

// TestFullDiskKeepsCellsAndResumes runs into a results directory on a
// small tmpfs that fills up, once in the middle of the cells (each cell's
// records take about 130 kB) and once at the end, when records.csv is
// joined (600 kB more): tlab stops with an error that names the directory
// and says how to continue, keeps every complete cell whole, and
// --resume finishes once space is freed, with every cell's records once.
func TestFullDiskKeepsCellsAndResumes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	bin := buildTlab(t)
	for _, c := range []struct{ name, size string }{{"in a cell", "400k"}, {"at the join", "1000k"}} {
		t.Run(c.name, func(t *testing.T) {
			// The two fill points side by side, each on a tmpfs of its
			// own: the runs mostly wait for their cells' packets.
			t.Parallel()
			dir := t.TempDir()
			file := filepath.Join(dir, "s.yaml")
			os.WriteFile(file, []byte(fullDiskScenario), 0o644)
			mnt := filepath.Join(dir, "disk")
			os.Mkdir(mnt, 0o755)
			if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size="+c.size); err != nil {
				t.Skipf("mount tmpfs: %v", err)
			}
			t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
			out := filepath.Join(mnt, "run")

			cmd := exec.Command(bin, "run", file, "--out", out, "--no-calibration", "--quality", "off")
			msg, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitError {
				t.Fatalf("a run onto a full disk: %v, want exit %d\n%s", err, exitError, msg)
			}
			for _, want := range []string{"the disk holding " + out + " is full", "no space left on device", "tlab run --resume " + out} {
				if !strings.Contains(string(msg), want) {
					t.Errorf("the error does not say %q:\n%s", want, msg)
				}
			}
			// Every cell marked complete holds its 600 records whole.
			done, _ := filepath.Glob(filepath.Join(out, "cells", "*", "DONE"))
			if len(done) == 0 {
				t.Fatalf("no complete cell kept:\n%s", msg)
			}
			for _, d := range done {
				if n := csvRows(t, filepath.Join(filepath.Dir(d), "records.csv")); n != 600 {
					t.Errorf("complete cell %s keeps %d records, want 600", filepath.Base(filepath.Dir(d)), n)
				}
			}
			t.Logf("full %s: %d of 6 cells complete", c.name, len(done))

			if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_REMOUNT, "size=20m"); err != nil {
				t.Fatalf("freeing space: %v", err)
			}
			if o, err := exec.Command(bin, "run", "--resume", out, "--no-calibration").CombinedOutput(); err != nil {
				t.Fatalf("resume once space is free: %v\n%s", err, o)
			}
			counts := runRecordCounts(t, out)
			if len(counts) != 6 {
				t.Errorf("%d cells after the resume, want 6: %v", len(counts), counts)
			}
			for cell, n := range counts {
				if n != 600 {
					t.Errorf("cell %s: %d records, want 600", cell, n)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(out, ".*.tmp")); len(left) > 0 {
				t.Errorf("temporary files left in the run directory: %v", left)
			}
		})
	}
}

// csvRows counts a CSV file's rows below its header.
func csvRows(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := -1
	for s := bufio.NewScanner(f); s.Scan(); {
		n++
	}
	return n
}
