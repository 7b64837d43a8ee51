package report

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"tlab/internal/results"
)

// liveRun writes a run directory as a sweep in flight leaves it: four
// cells planned, two complete (one disturbed), one begun.
func liveRun(t *testing.T, started time.Time) string {
	t.Helper()
	dir := t.TempDir()
	m := &results.Manifest{Scenario: "live", Cells: 4, Started: started, Requirements: []string{"delay_p99_ms <= 20"}, Plots: []string{"delay_box", "delay_cdf"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	var rows []results.Summary
	for i, p := range []string{"tcp", "h1s"} {
		row := results.Summary{Cell: p, Profile: "5g", Protocol: p, Rep: 1,
			Fields: []results.Field{{Name: "delay_p50_ms", Value: 10 + 10*float64(i)}, {Name: "delay_p25_ms", Value: 9 + 10*float64(i)}, {Name: "delay_p75_ms", Value: 11 + 10*float64(i)},
				{Name: "delay_p5_ms", Value: 8 + 10*float64(i)}, {Name: "delay_p95_ms", Value: 12 + 10*float64(i)}, {Name: "delay_p99_ms", Value: 12 + 10*float64(i)}, {Name: "quality", Value: "clean"}}}
		if p == "h1s" {
			row.Set("quality", "disturbed: 12 % of CPU time stolen")
		}
		rows = append(rows, row)
		cdir := results.CellDir(dir, p)
		os.MkdirAll(cdir, 0o755)
		// Each cell took a minute.
		done := started.Add(time.Duration(i+1) * time.Minute).Format(time.RFC3339)
		if err := os.WriteFile(filepath.Join(cdir, results.DoneFile), []byte(done+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(results.CellDir(dir, "h3"), 0o755) // in flight
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLiveSnapshot: progress, pace and time left, disturbed cells, the
// answer so far, and the summary's plots only (the records come at the
// end), all read from the directory alone.
func TestLiveSnapshot(t *testing.T) {
	started := time.Now().Add(-3 * time.Minute).Truncate(time.Second)
	s, err := Live(liveRun(t, started))
	if err != nil {
		t.Fatal(err)
	}
	p := s.Progress
	// Two cells in two minutes: the two left take about two more.
	if p.Total != 4 || p.Done != 2 || len(p.Running) != 1 || p.Running[0] != "h3" || p.Finished || p.Left != 2*time.Minute || p.Disturbed != 1 {
		t.Errorf("progress %+v", p)
	}
	if len(s.Run.Answers) != 1 || s.Run.Answers[0].Best != "tcp" {
		t.Errorf("answers %+v", s.Run.Answers)
	}
	if len(s.Figures) == 0 {
		t.Fatal("no plot")
	}
	for _, f := range s.Figures {
		if !strings.HasPrefix(f.Name, "delay_box") {
			t.Errorf("figure %s: the live view draws from the summary only", f.Name)
		}
	}
}

// TestLiveHandler: the page says how far the run is and reloads itself,
// holds nothing from outside, serves the directory's files read-only and
// nothing outside it; once the run is over it stops reloading.
func TestLiveHandler(t *testing.T) {
	dir := liveRun(t, time.Now().Add(-3*time.Minute))
	srv := httptest.NewServer(LiveHandler(dir))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, page := get("/")
	for _, want := range []string{"2 of 4 cells complete", `http-equiv="refresh"`, "Running: h3", "1 cell disturbed", "The answer", "tcp meets every requirement", `<figure id="delay_box`, "disturbed: 12 % of CPU time stolen"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if code != 200 || regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//|<script|@import|url\(http`).MatchString(page) {
		t.Errorf("status %d, or the page references something outside itself", code)
	}
	var status struct {
		Progress Progress
		Rows     []map[string]any
	}
	if code, body := get("/status.json"); code != 200 || json.Unmarshal([]byte(body), &status) != nil || status.Progress.Done != 2 || len(status.Rows) != 2 {
		t.Errorf("status.json: %d %s", code, body)
	}
	if code, body := get("/files/summary.csv"); code != 200 || !strings.HasPrefix(body, "cell,profile") {
		t.Errorf("files/summary.csv: %d %q", code, body)
	}
	for _, path := range []string{"/files/../../etc/passwd", "/files/%2e%2e/%2e%2e/etc/passwd", "/etc/passwd", "/status.json/x"} {
		if code, body := get(path); code == 200 && strings.Contains(body, "root:") {
			t.Errorf("%s served a file outside the run directory", path)
		}
	}
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		req, _ := http.NewRequest(method, srv.URL+"/files/summary.csv", strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d", method, resp.StatusCode)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, results.SummaryCSV)); !strings.HasPrefix(string(b), "cell,") {
		t.Error("a request changed the run directory")
	}
	// The run ends: the page says so and stops reloading.
	m, _ := results.ReadManifest(dir)
	now := time.Now()
	m.Finished = &now
	m.Save(dir)
	_, page = get("/")
	if strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, "the run is over") || strings.Contains(page, "Running:") {
		t.Errorf("a finished run's page:\n%s", page)
	}
}
