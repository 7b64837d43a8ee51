package emu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tlab/internal/untrusted"
)

// TestLoadProfileRefusesWhatIsNotAFile: `profiles: [/dev/zero]` made
// tlab validate read without end until memory ran out, and a FIFO held it
// for ever; both are refused at once, as is a profile beyond the cap.
func TestLoadProfileRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.yaml")
	// A valid YAML comment one byte longer than the cap.
	if err := os.WriteFile(huge, []byte("#"+strings.Repeat("x", MaxProfileFile)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path    string
		notFile bool
	}{{"/dev/zero", true}, {fifo, true}, {huge, false}} {
		done := make(chan error, 1)
		go func() { _, err := LoadProfile(c.path); done <- err }()
		select {
		case err := <-done:
			var tl *untrusted.TooLargeError
			switch {
			case c.notFile && !errors.Is(err, untrusted.ErrNotRegular):
				t.Errorf("LoadProfile(%s): %v, want %v", c.path, err, untrusted.ErrNotRegular)
			case !c.notFile && !errors.As(err, &tl):
				t.Errorf("LoadProfile(%s): %v, want an error naming the cap", c.path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("LoadProfile(%s) still running after 5 s", c.path)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := LoadTrace(fifo); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, untrusted.ErrNotRegular) {
			t.Errorf("LoadTrace of a FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadTrace of a FIFO still running after 5 s")
	}
}
