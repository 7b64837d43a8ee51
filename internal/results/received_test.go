package results

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

// within fails the test when fn has not returned after d: a read of a
// FIFO or a device that is not refused hangs or fills memory instead.
func within(t *testing.T, d time.Duration, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%s still running after %v", what, d)
		return nil
	}
}

// TestReadManifestOfAReceivedDirectory: a received results directory
// whose manifest.json is a FIFO (a read that never returns), a link to
// /dev/zero (a read that never ends) or a link out of the directory (to a
// file of this machine's) is refused at once, naming the file.
func TestReadManifestOfAReceivedDirectory(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"scenario":"this machine's"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		plant func(path string) error
		want  string
	}{
		{"a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "FIFO"},
		{"a link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "escapes"}, // refused as a link out, before it is a device,
		{"a link out of the directory", func(p string) error { return os.Symlink(secret, p) }, "escapes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := c.plant(filepath.Join(dir, ManifestFile)); err != nil {
				t.Fatal(err)
			}
			err := within(t, 5*time.Second, "ReadManifest", func() error { _, err := ReadManifest(dir); return err })
			if err == nil || !strings.Contains(err.Error(), ManifestFile) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ReadManifest: %v, want an error naming %s and saying %q", err, ManifestFile, c.want)
			}
		})
	}
}

// TestReadSummariesRefusesWhatIsNotAFile: summary.json as a FIFO or
// /dev/zero is refused at once, as are records.csv for the scanner.
func TestReadSummariesRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, SummaryJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, RecordsFile)); err != nil {
		t.Fatal(err)
	}
	err := within(t, 5*time.Second, "ReadSummaries", func() error { _, err := ReadSummaries(filepath.Join(dir, SummaryJSON), nil); return err })
	if !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("ReadSummaries of a FIFO: %v", err)
	}
	err = within(t, 5*time.Second, "ScanRecords", func() error {
		return ScanRecords(filepath.Join(dir, RecordsFile), nil, func(RecordRow) error { return nil })
	})
	if !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("ScanRecords of /dev/zero: %v", err)
	}
}
