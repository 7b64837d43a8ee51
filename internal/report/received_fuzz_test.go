package report

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"tlab/internal/results"
)

// FuzzReceivedRunDirectory: a results directory from elsewhere, whose
// summary.json, manifest.json, plots/ and report.html are each, as the
// fuzzer picks, a file of fuzzed bytes, a link out of the directory to
// this machine's file, a FIFO, or missing. tlab report reads it and
// builds its report (or says why not) without panicking, hanging on the
// FIFO, or changing the file the links name.
func FuzzReceivedRunDirectory(f *testing.F) {
	dir := receivedRun(f)
	summary, _ := os.ReadFile(filepath.Join(dir, results.SummaryJSON))
	manifest, _ := os.ReadFile(filepath.Join(dir, results.ManifestFile))
	f.Add(uint8(0), summary, manifest)
	f.Add(uint8(0b01_00_00_00), summary, manifest)        // report.html a link out
	f.Add(uint8(0b00_01_00_00), summary, manifest)        // plots a link out
	f.Add(uint8(0b00_00_10_00), summary, manifest)        // manifest.json a FIFO
	f.Add(uint8(0b00_00_00_10), summary, manifest)        // summary.json a FIFO
	f.Add(uint8(0b01_01_01_01), summary, manifest)        // every one a link out
	f.Add(uint8(0), []byte(`[{"cell":3}]`), []byte(`{}`)) // hand-edited
	victimDir := f.TempDir()
	victim := filepath.Join(victimDir, "victim")
	const was = "this machine's file\n"
	f.Fuzz(func(t *testing.T, kinds uint8, summary, manifest []byte) {
		if err := os.WriteFile(victim, []byte(was), 0o600); err != nil {
			t.Fatal(err)
		}
		d := t.TempDir()
		// Two bits per name: 0 a file of the fuzzed bytes, 1 a link out,
		// 2 a FIFO, 3 missing.
		for i, e := range []struct {
			name string
			data []byte
		}{{results.SummaryJSON, summary}, {results.ManifestFile, manifest}, {"plots", nil}, {"report.html", nil}} {
			p := filepath.Join(d, e.name)
			switch kinds >> (2 * i) & 3 {
			case 0:
				if e.data != nil {
					os.WriteFile(p, e.data, 0o644)
				}
			case 1:
				target := victim
				if e.name == "plots" {
					target = victimDir
				}
				os.Symlink(target, p)
			case 2:
				syscall.Mkfifo(p, 0o644)
			}
		}
		if r, err := Load(d); err == nil {
			Build(r, nil)
		}
		if b, err := os.ReadFile(victim); err != nil || string(b) != was {
			t.Fatalf("the file a link named now holds %q (%v)", b, err)
		}
		if entries, _ := os.ReadDir(victimDir); len(entries) != 1 {
			t.Fatalf("written beside the linked file: %v", entries)
		}
	})
}
