package results

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadRunDirectory: a truncated or hand-edited summary.json or
// manifest.json (what --resume, tlab merge, report and stats read) gives
// an error, never a panic.
func FuzzReadRunDirectory(f *testing.F) {
	dir := f.TempDir()
	if err := WriteSummaries(dir, sampleRows()); err != nil {
		f.Fatal(err)
	}
	if err := (&Manifest{Scenario: "s", Seed: 1, Params: []string{"workload.interval"}}).Save(dir); err != nil {
		f.Fatal(err)
	}
	summary, _ := os.ReadFile(filepath.Join(dir, SummaryJSON))
	manifest, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	f.Add(summary, manifest)
	f.Add(summary[:len(summary)/2], manifest[:len(manifest)/3])
	f.Add([]byte(`[{"cell": 3}]`), []byte(`{"format": 99}`))
	f.Fuzz(func(t *testing.T, summary, manifest []byte) {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, SummaryJSON), summary, 0o644)
		os.WriteFile(filepath.Join(d, ManifestFile), manifest, 0o644)
		r, err := Open(d)
		if err != nil {
			return
		}
		// What opened can be written back and read again alike.
		out := t.TempDir()
		if err := WriteSummaries(out, r.Rows); err != nil {
			t.Fatalf("rows read cannot be written: %v", err)
		}
		var params []string
		if r.Manifest != nil {
			params = r.Manifest.Params
		}
		back, err := ReadSummaries(filepath.Join(out, SummaryJSON), params)
		if err != nil || len(back) != len(r.Rows) {
			t.Fatalf("rows written do not read back: %v (%d against %d)", err, len(back), len(r.Rows))
		}
	})
}
