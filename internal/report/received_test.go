package report

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"tlab/internal/results"
)

// receivedRun writes a small run directory (rows and a manifest asking
// for one box plot, delay_box-1-lan) as one a colleague would send.
func receivedRun(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	var rows []results.Summary
	for _, p := range []string{"tcp", "h3"} {
		rows = append(rows, results.Summary{Cell: p, Profile: "lan", Protocol: p, Workload: "periodic", Rep: 1,
			Fields: []results.Field{{Name: "delay_p5_ms", Value: 1.0}, {Name: "delay_p25_ms", Value: 2.0}, {Name: "delay_p50_ms", Value: 3.0}, {Name: "delay_p75_ms", Value: 4.0}, {Name: "delay_p95_ms", Value: 5.0}}})
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Manifest{Scenario: "received", Params: []string{}, Plots: []string{"delay_box"}}).Save(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReportOnAReceivedDirectoryWritesNoLinkTarget: a results directory
// from elsewhere (a tarball keeps links) whose plots/delay_box-1-lan.png
// and report.html are links to a file of this machine's: the report
// replaces the links with its own files; the file they named is unchanged.
func TestReportOnAReceivedDirectoryWritesNoLinkTarget(t *testing.T) {
	dir := receivedRun(t)
	victim := filepath.Join(t.TempDir(), "victim")
	const was = "this machine's file\n"
	if err := os.WriteFile(victim, []byte(was), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "plots"), 0o755)
	for _, name := range []string{"plots/delay_box-1-lan.png", "plots/delay_box-1-lan.svg", "report.html"} {
		if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(r, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != was {
		t.Fatalf("the linked file now starts %q", b[:min(len(b), 16)])
	}
	png, err := os.ReadFile(filepath.Join(dir, "plots", "delay_box-1-lan.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("the plot is not a PNG in the run directory: %v", err)
	}
}

// TestReportRefusesAPlotsLinkOutOfTheDirectory: plots itself a link to a
// directory elsewhere: nothing is written there, the report says why.
func TestReportRefusesAPlotsLinkOutOfTheDirectory(t *testing.T) {
	dir := receivedRun(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(dir, "plots")); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(r, nil); err == nil {
		t.Error("the report was built through a plots link out of the directory")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("written elsewhere: %v", entries)
	}
}
