package experiment

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/cellrun"
	"tlab/internal/results"
)

// TestManifestWithoutCommitWarns: a tlab built without version stamping
// (go test's binaries are: the go command stamps the commit only into a
// main package built in its checkout) writes a manifest without the
// commit; the run says so, on its log (stderr) and in the manifest's
// warnings, since nothing else could tell which code measured it.
func TestManifestWithoutCommitWarns(t *testing.T) {
	if w := cellrun.UnstampedWarning(&results.Manifest{Commit: "5eed070"}); w != "" {
		t.Errorf("a manifest with its commit warns: %q", w)
	}
	dir := filepath.Join(t.TempDir(), "run")
	f := &fakeAttempts{release: map[string][]float64{"tcp": {10}, "quic": {10}, "h2": {10}}, calls: map[string]int{}}
	var log strings.Builder
	if _, err := (Sweep{Scenario: fakeScenario(t), Dir: dir, SkipCalibration: true, Log: &log, attempt: f.run}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Commit != "" {
		t.Skipf("SKIP: this test binary carries commit %s", m.Commit)
	}
	const want = "built without the commit it came from"
	if !strings.Contains(log.String(), "warning: this tlab was "+want) {
		t.Errorf("the run's log does not warn of the missing commit:\n%s", log.String())
	}
	if !strings.Contains(strings.Join(m.Warnings, "\n"), want) {
		t.Errorf("the manifest's warnings lack the missing commit: %q", m.Warnings)
	}
}
