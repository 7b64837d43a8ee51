package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/qoo"
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
		// A complete cell's own summary, written before its DONE: the
		// rows so far (summary.json comes at the run's end).
		if err := results.WriteSummaries(cdir, []results.Summary{row}); err != nil {
			t.Fatal(err)
		}
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
	srv := httptest.NewServer(mustLiveHandler(t, dir))
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

func mustLiveHandler(t *testing.T, dir string, allowHosts ...string) http.Handler {
	t.Helper()
	return LiveHandler(dir, allowHosts...)
}

// getWith sends a GET to srv with the Host header set to host.
func getWith(t *testing.T, srv *httptest.Server, path, host string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestLiveViewServesNothingALinkPointsAt: a run directory that came from
// someone else holds links to a secret file and a folder outside it, and
// its manifest is a link too. The view serves neither the file nor the
// folder's listing, and its page does not read the linked manifest.
func TestLiveViewServesNothingALinkPointsAt(t *testing.T) {
	dir := liveRun(t, time.Now().Add(-3*time.Minute))
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("the-secret-words\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"notes.txt": secret, "linked": outside, "plots-up": ".."} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(mustLiveHandler(t, dir))
	defer srv.Close()
	for _, path := range []string{"/files/notes.txt", "/files/linked/", "/files/linked/secret.txt", "/files/plots-up/"} {
		resp, body := getWith(t, srv, path, "")
		if resp.StatusCode == http.StatusOK || strings.Contains(body, "the-secret-words") || strings.Contains(body, "secret.txt") {
			t.Errorf("%s: status %d served what a link points at outside the run directory: %q", path, resp.StatusCode, body)
		}
	}
	// A link inside the directory that stays inside it still works.
	if err := os.Symlink(results.SummaryCSV, filepath.Join(dir, "summary-link.csv")); err != nil {
		t.Fatal(err)
	}
	if resp, body := getWith(t, srv, "/files/summary-link.csv", ""); resp.StatusCode != 200 || !strings.HasPrefix(body, "cell,") {
		t.Errorf("a link within the run directory: %d %q", resp.StatusCode, body)
	}
	// The manifest is replaced by a link to another run's manifest, one
	// only its owner may read, whose scenario name is the secret.
	other := t.TempDir()
	if err := (&results.Manifest{Scenario: "the-secret-words", Cells: 4, Started: time.Now()}).Save(other); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, results.ManifestFile)
	os.Remove(manifest)
	if err := os.Symlink(filepath.Join(other, results.ManifestFile), manifest); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/status.json", "/files/manifest.json"} {
		resp, body := getWith(t, srv, path, "")
		if resp.StatusCode == http.StatusOK || strings.Contains(body, "the-secret-words") {
			t.Errorf("%s with a linked manifest: status %d %q", path, resp.StatusCode, body)
		}
	}
}

// TestLiveViewRefusesARebindingHost: a page on another site that rebinds
// its own name to the view's address makes the browser send that name as
// Host; the view answers only its IP address, localhost and names it was
// told to allow.
func TestLiveViewRefusesARebindingHost(t *testing.T) {
	dir := liveRun(t, time.Now().Add(-3*time.Minute))
	srv := httptest.NewServer(mustLiveHandler(t, dir, "lab.example.org"))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for host, ok := range map[string]bool{
		"":                                       true, // the client's own: 127.0.0.1:PORT
		fmt.Sprintf("localhost:%d", port):        true,
		fmt.Sprintf("[::1]:%d", port):            true,
		"LAB.example.org":                        true,
		"attacker.example":                       false,
		fmt.Sprintf("attacker.example:%d", port): false,
		"127.0.0.1.attacker.example":             false,
		"localhost.attacker.example":             false,
	} {
		for _, path := range []string{"/", "/status.json", "/files/summary.csv"} {
			resp, body := getWith(t, srv, path, host)
			if got := resp.StatusCode == http.StatusOK; got != ok {
				t.Errorf("Host %q %s: status %d, want served=%v", host, path, resp.StatusCode, ok)
			}
			if !ok && strings.Contains(body, "cell,profile") {
				t.Errorf("Host %q %s: the refusal carried the file", host, path)
			}
		}
	}
}

// TestLiveViewFilesRunSandboxed: a report.html or SVG in the run directory
// (written by anyone) is served with a sandboxing content policy and no
// sniffing, so it cannot run script in the view's origin; the page itself
// loads nothing from outside and may not be framed.
func TestLiveViewFilesRunSandboxed(t *testing.T) {
	dir := liveRun(t, time.Now().Add(-3*time.Minute))
	os.WriteFile(filepath.Join(dir, "report.html"), []byte("<html><script>fetch('/status.json')</script></html>"), 0o644)
	os.WriteFile(filepath.Join(dir, "noext"), []byte("<html><script>alert(1)</script></html>"), 0o644)
	srv := httptest.NewServer(mustLiveHandler(t, dir))
	defer srv.Close()
	for _, path := range []string{"/files/report.html", "/files/noext", "/files/summary.csv"} {
		resp, _ := getWith(t, srv, path, "")
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.HasPrefix(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "allow-scripts") || strings.Contains(csp, "allow-same-origin") {
			t.Errorf("%s: Content-Security-Policy %q, want a sandbox without scripts or the view's origin", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", path)
		}
	}
	resp, _ := getWith(t, srv, "/", "")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("the page's policy %q", csp)
	}
}

// FuzzAllowedHost: whatever Host header a client sends, the view accepts
// it only when it names an IP address, localhost (or under .localhost),
// or an allowed name; no header makes it panic.
func FuzzAllowedHost(f *testing.F) {
	for _, seed := range []string{"127.0.0.1:8047", "[::1]:8047", "localhost", "a.localhost:1", "lab.example.org", "attacker.example", "127.0.0.1.attacker.example", "", ":", "[", "LOCALHOST.", "x:y:z"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !AllowedHost(host, []string{"lab.example.org"}) {
			return
		}
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
		if _, err := netip.ParseAddr(h); err == nil {
			return
		}
		if h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "lab.example.org" {
			return
		}
		t.Fatalf("accepted Host %q (%q)", host, h)
	})
}

// TestLiveViewScoresTheCellsDone: a run that keeps a Quality of Outcome
// profile shows each stack's score in the answer so far, from the records
// of the cells done (joined only at the end), on the page as in the JSON.
func TestLiveViewScoresTheCellsDone(t *testing.T) {
	dir := liveRun(t, time.Now().Add(-3*time.Minute))
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := qoo.Builtin().Lookup("control-loop-25ms")
	m.QoO = p.Wire()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	// tcp answers in 10 ms (QoO 100); h1s's p99 is 18.75 ms (QoO 50).
	for _, c := range []struct {
		cell string
		slow float64
	}{{"tcp", 10}, {"h1s", 18.75}} {
		w, err := results.CreateRecords(filepath.Join(results.CellDir(dir, c.cell), results.RecordsFile), results.Cell{ID: c.cell, Profile: "5g", Protocol: c.cell, Rep: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			d := 10.0
			if i >= 190 {
				d = c.slow
			}
			w.Write(results.Record{Seq: i, DelayMs: d, DoneMs: float64(i)})
		}
		w.Close()
	}
	s, err := Live(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, st := range s.Run.Answers[0].Stacks {
		if st.QoO != nil {
			got[st.Protocol] = st.QoO.Score
		}
	}
	if got["tcp"] != 100 || !(math.Abs(got["h1s"]-50) <= 1e-9) {
		t.Errorf("live scores %v, want tcp 100 and h1s 50", got)
	}
	var page strings.Builder
	if err := writeLive(&page, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<b>control-loop-25ms</b>") {
		t.Error("the live page does not show the Quality of Outcome")
	}
	// A view polled through a run reads a finished cell's records once:
	// with tcp scored, records that would now score 0 are not read again.
	scored := &analysis.Scored{}
	if _, err := live(dir, scored); err != nil {
		t.Fatal(err)
	}
	w, err := results.CreateRecords(filepath.Join(results.CellDir(dir, "tcp"), results.RecordsFile), results.Cell{ID: "tcp", Profile: "5g", Protocol: "tcp", Rep: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		w.Write(results.Record{Seq: i, DelayMs: 30, DoneMs: float64(i)})
	}
	w.Close()
	again, err := live(dir, scored)
	if err != nil {
		t.Fatal(err)
	}
	// The rows so far come in cell order (the cells' names here: h1s, tcp).
	i := slices.IndexFunc(again.Run.Answers[0].Stacks, func(s advise.Stack) bool { return s.Protocol == "tcp" })
	if i < 0 || again.Run.Answers[0].Stacks[i].QoO == nil || again.Run.Answers[0].Stacks[i].QoO.Score != 100 {
		t.Errorf("the second look lost tcp's score: %+v", again.Run.Answers[0].Stacks)
	}
}

// TestLiveViewDrawsStudyAsStepsFromTheRowsSoFar: the live view's
// delay_box and conns_heatmap draw the delay-box and conns-grid steps,
// which it asks the analysis for over the rows so far (the report
// averages nothing): tcp's box is its one repetition's quantiles (p50
// 10), h1s's grid its one cell (5 ms, 128 B: 40 per 1000).
func TestLiveViewDrawsStudyAsStepsFromTheRowsSoFar(t *testing.T) {
	dir := t.TempDir()
	m := &results.Manifest{Scenario: "live", Cells: 3, Started: time.Now().Add(-time.Minute), Plots: []string{"delay_box", "conns_heatmap"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"tcp", "h1s"} {
		row := results.Summary{Cell: p, Profile: "5g", Protocol: p, Rep: 1, Fields: []results.Field{
			{Name: "delay_p5_ms", Value: 8}, {Name: "delay_p25_ms", Value: 9}, {Name: "delay_p50_ms", Value: 10}, {Name: "delay_p75_ms", Value: 11}, {Name: "delay_p95_ms", Value: 12},
			{Name: "conns_per_1000", Value: 1 + 39*float64(i)}, {Name: "requests", Value: 1000}, {Name: "interval_ms", Value: 5}, {Name: "req_size", Value: 128}}}
		cdir := results.CellDir(dir, p)
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := results.WriteSummaries(cdir, []results.Summary{row}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cdir, results.DoneFile), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Live(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := s.Run.analysis.DelayBoxOf("5g", "", "tcp"); !ok || b.P50 != 10 || b.P5 != 8 || b.P95 != 12 {
		t.Errorf("live delay box of tcp = %+v (%v), want p5 8, p50 10, p95 12", b, ok)
	}
	if g, ok := s.Run.analysis.ConnsGridOf("5g", "", "h1s"); !ok || len(g.Means) != 1 || g.Means[0][0] != 40 {
		t.Errorf("live connections grid of h1s = %+v (%v), want one cell, 40", g, ok)
	}
	var kinds []string
	for _, f := range s.Figures {
		kinds = append(kinds, f.Kind)
	}
	if !slices.Contains(kinds, "delay_box") || !slices.Contains(kinds, "conns_heatmap") {
		t.Errorf("live figures %v, want delay_box and conns_heatmap", kinds)
	}
}
