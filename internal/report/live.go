package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/results"

	"tlab/internal/untrusted"
)

// Progress is how far a run directory's sweep has come, read from the
// directory alone (so that a live view works on any run: one this tlab
// is running, one another process or a shard writes, a finished one).
type Progress struct {
	Total    int       `json:"total"`
	Done     int       `json:"done"`
	Running  []string  `json:"running,omitempty"`
	Started  time.Time `json:"started"`
	Finished bool      `json:"finished"`
	// Left is the time the remaining cells will take at the pace of the
	// cells completed since the run last started or resumed; negative
	// while there is no pace yet.
	Left      time.Duration `json:"left_ns"`
	Disturbed int           `json:"disturbed"`
}

// Snapshot is what a live view shows of a run at one moment: the run so
// far (its rows, requirements and answers), its progress and its plots.
type Snapshot struct {
	Run      *Run
	Progress Progress
	Figures  []Figure
	Notes    []string
}

// MarshalJSON is status.json: the progress, the rows, the requirements and
// the answers so far, and the plots' notes.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Progress     Progress          `json:"progress"`
		Rows         []results.Summary `json:"rows"`
		Requirements []string          `json:"requirements,omitempty"`
		Answers      []advise.Answer   `json:"answers,omitempty"`
		Notes        []string          `json:"notes,omitempty"`
	}{s.Progress, s.Run.Rows, s.Run.Requirements, s.Run.Answers, s.Notes})
}

// Live reads a run directory as it is now: the cells complete so far,
// the answer so far (for the run's requirements) and the plots that need
// only the summary. It writes nothing.
func Live(dir string) (*Snapshot, error) { return live(dir, nil) }

// live is Live with the Quality of Outcome of cells already scored
// (scored, which it adds to): a finished cell's records no longer change,
// so a view polled through a long run reads each once.
func live(dir string, scored *analysis.Scored) (*Snapshot, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("live view: %s is not a run directory", dir)
	}
	// A run that is starting has no manifest yet: it shows as waiting.
	m, err := results.ReadManifest(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("live view: %w", err)
	}
	r := runOf(dir, m)
	// The rows so far: the complete cells' while the run goes on
	// (summary.json is written at its end), none before the first.
	var params []string
	if m != nil {
		params = m.Params
	}
	if r.Rows, err = results.Rows(dir, m, params); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("live view: %w", err)
	}
	s := &Snapshot{Run: r}
	s.Progress, err = readProgress(dir, m, time.Now())
	if err != nil {
		return nil, fmt.Errorf("live view: %w", err)
	}
	for _, row := range r.Rows {
		if strings.HasPrefix(row.Label("quality"), "disturbed") {
			s.Progress.Disturbed++
		}
	}
	if len(r.Rows) == 0 {
		return s, nil
	}
	// The answer so far is the analysis's; the view renders it.
	if r.Answers, err = analysis.SoFar(dir, m, r.Rows, scored); err != nil {
		return nil, fmt.Errorf("live view: %w", err)
	}
	// The bars' means, study D's boxes and study E's tables are the
	// analysis's too, from the rows so far.
	if r.analysis, err = analysis.Only(&results.Run{Dir: dir, Manifest: m, Rows: r.Rows}, analysis.MeansStep, analysis.DelayBoxStep, analysis.ConnsGridStep, analysis.PubsubBoxesStep, analysis.StudyEStep); err != nil {
		return nil, fmt.Errorf("live view: %w", err)
	}
	// Plots from the summary only: the records are joined at the end.
	if len(r.Plots) == 0 {
		r.Plots = Supported(r.Rows)
	}
	r.Plots = slices.DeleteFunc(slices.Clone(r.Plots), func(kind string) bool {
		spec, err := results.ParsePlotSpec(kind)
		k, ok := plotKinds[spec.Kind]
		return err != nil || !ok || slices.Contains(k.Needs, "records")
	})
	if s.Figures, s.Notes, err = r.figures(""); err != nil {
		return nil, fmt.Errorf("live view: %w", err)
	}
	return s, nil
}

// readProgress counts the cells that are complete (DONE) and those begun
// but not complete, and paces the rest by the cells completed since the
// run last started or resumed.
// maxDoneFile bounds what is read of a cell's DONE marker: a timestamp.
const maxDoneFile = 4 << 10

func readProgress(dir string, m *results.Manifest, now time.Time) (Progress, error) {
	p := Progress{Left: -1}
	if m == nil {
		return p, nil
	}
	p.Total, p.Started, p.Finished = m.Cells, m.Started, m.Finished != nil
	since := m.Started
	if n := len(m.Resumed); n > 0 {
		since = m.Resumed[n-1]
	}
	entries, err := os.ReadDir(filepath.Join(dir, results.CellsDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return p, err
	}
	var last time.Time
	paced := 0
	for _, e := range entries {
		b, err := untrusted.ReadFile(filepath.Join(dir, results.CellsDir, e.Name(), results.DoneFile), maxDoneFile)
		if err != nil {
			if !p.Finished {
				p.Running = append(p.Running, e.Name())
			}
			continue
		}
		p.Done++
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(b))); err == nil && !t.Before(since) {
			paced++
			if t.After(last) {
				last = t
			}
		}
	}
	if p.Finished {
		p.Left = 0
	} else if paced > 0 {
		p.Left = last.Sub(since) / time.Duration(paced) * time.Duration(max(p.Total-p.Done, 0))
	}
	return p, nil
}

// LiveHandler serves a run directory's live view, read-only: the page at
// /, which reloads itself every few seconds while the run goes on, its
// data at /status.json, and the directory's own files under /files/
// (report.html once written, summary.csv, ...). It serves nothing else
// and answers only GET and HEAD.
//
// A run directory may come from someone else or a shared disk, and a web
// page the user visits may aim at the view through a name it controls, so
// the view is confined three ways: files are opened through an os.Root of
// the directory (a symbolic link that leads out of it is refused, however
// it is reached); a request must name the view by an IP address,
// localhost or one of allowHosts (a rebound DNS name is refused, so
// another site's script cannot read the view through the browser); and
// what /files/ serves runs in a sandbox of its own origin with no
// scripts, no requests beyond data: images and no content sniffing.
func LiveHandler(dir string, allowHosts ...string) http.Handler {
	root := &lazyRoot{dir: dir}
	mux := http.NewServeMux()
	var cache liveCache
	// serve answers with the snapshot as write renders it.
	serve := func(contentType string, write func(http.ResponseWriter, *Snapshot) error) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if r, err := root.get(); err == nil {
				if err := confined(r, results.ManifestFile, results.SummaryJSON); err != nil {
					http.Error(w, err.Error(), http.StatusForbidden)
					return
				}
			}
			s, err := cache.get(dir)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "no-store")
			if err := write(w, s); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
		}
	}
	mux.HandleFunc("GET /{$}", serve("text/html; charset=utf-8", func(w http.ResponseWriter, s *Snapshot) error { return writeLive(w, s) }))
	mux.HandleFunc("GET /status.json", serve("application/json", func(w http.ResponseWriter, s *Snapshot) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}))
	mux.Handle("GET /files/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", filesPolicy)
		rt, err := root.get()
		if err != nil {
			http.Error(w, "live view: the run directory does not exist yet", http.StatusNotFound)
			return
		}
		http.StripPrefix("/files/", http.FileServerFS(rt.FS())).ServeHTTP(w, r)
	}))
	return hostGuard(readOnly(securityHeaders(mux)), allowHosts)
}

// lazyRoot is the run directory as an os.Root, opened at the first
// request that finds it: `tlab run --serve` serves the view before the
// run has made its directory.
type lazyRoot struct {
	dir  string
	mu   sync.Mutex
	root *os.Root
}

func (l *lazyRoot) get() (*os.Root, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.root != nil {
		return l.root, nil
	}
	r, err := os.OpenRoot(l.dir)
	if err != nil {
		return nil, err
	}
	l.root = r
	return r, nil
}

// pagePolicy lets the live page show its inline style and data: images and
// nothing else; no other site may frame it. filesPolicy adds a sandbox:
// a report.html or an SVG from the run directory, whoever wrote it, runs
// without scripts in an origin of its own, so it cannot read the view.
const (
	pagePolicy  = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
	filesPolicy = "sandbox; " + pagePolicy
)

// securityHeaders sets what every answer carries: the page's content
// policy (files override it with theirs) and no content sniffing, so a
// file is what its name says and never HTML by guess.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", pagePolicy)
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// confined refuses when one of the named files of the run directory is a
// link that leads out of it (the snapshot reads them by path; a missing
// file is fine: a run that is starting has none).
func confined(root *os.Root, names ...string) error {
	for _, name := range names {
		if _, err := root.Stat(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("live view: %s is not a file of the run directory: %v", name, err)
		}
	}
	return nil
}

// hostGuard answers only requests whose Host names the view by an IP
// address, localhost (or a name under .localhost), or one of allow. A DNS
// rebinding attack makes the victim's browser send the attacker's own
// name to the view's address; refusing that name keeps the attacker's
// page from reading what the view serves.
func hostGuard(h http.Handler, allow []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !AllowedHost(r.Host, allow) {
			http.Error(w, fmt.Sprintf("live view: refused the host name %q: open the view by its IP address or localhost, or serve it with --allow-host NAME", r.Host), http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// AllowedHost says whether a request's Host header names the view by an
// IP address, localhost, or one of allow (compared without case).
func AllowedHost(hostport string, allow []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, a := range allow {
		if strings.EqualFold(strings.TrimSuffix(a, "."), host) {
			return true
		}
	}
	return false
}

// readOnly refuses every method but GET and HEAD.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: this view serves a run directory and changes nothing", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// liveCache keeps the last snapshot while nothing in the directory that
// it reads has changed (drawing the plots is the expensive part).
type liveCache struct {
	mu   sync.Mutex
	key  string
	snap *Snapshot
	// scored holds the Quality of Outcome of the cells scored so far.
	scored analysis.Scored
}

func (c *liveCache) get(dir string) (*Snapshot, error) {
	key := stamp(filepath.Join(dir, results.SummaryJSON)) + stamp(filepath.Join(dir, results.ManifestFile)) + stamp(filepath.Join(dir, results.CellsDir))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != nil && key == c.key && c.snap.Progress.Finished {
		return c.snap, nil
	}
	if c.snap != nil && key == c.key {
		// Same cells: only the time left moves.
		s := *c.snap
		if p, err := readProgress(dir, c.snap.Run.Manifest, time.Now()); err == nil {
			p.Disturbed = s.Progress.Disturbed
			s.Progress = p
		}
		return &s, nil
	}
	s, err := live(dir, &c.scored)
	if err != nil {
		return nil, err
	}
	c.key, c.snap = key, s
	return s, nil
}

func stamp(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "-;"
	}
	return fmt.Sprintf("%d/%d;", st.ModTime().UnixNano(), st.Size())
}

func writeLive(w interface{ Write([]byte) (int, error) }, s *Snapshot) error {
	swept, reps := false, false
	for _, row := range s.Run.Rows {
		swept = swept || len(row.Params) > 0
		reps = reps || row.Rep > 1
	}
	return livePage.ExecuteTemplate(w, "live", struct {
		Run         *Run
		Progress    Progress
		Figures     []Figure
		Columns     any
		Notes       []string
		Swept, Reps bool
	}{s.Run, s.Progress, s.Figures, tableColumns(s.Run.Rows, s.Run.Manifest), s.Notes, swept, reps})
}

// livePage shares the report's sections (the answer, every cell) and
// style; it reloads itself while the run goes on (a meta refresh: no
// script, nothing from outside the page).
var livePage = template.Must(template.Must(page.Clone()).New("live").Funcs(template.FuncMap{
	"left": func(d time.Duration) string {
		if d < 0 {
			return "time left: known after the first cell"
		}
		return "about " + d.Round(time.Second).String() + " left"
	},
	"since": func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
{{if not .Progress.Finished}}<meta http-equiv="refresh" content="3">{{end}}
<title>tlab live: {{.Run.Name}}</title>
<style>{{style}} progress{width:100%;height:1.2em}</style></head><body>
<h1>{{.Run.Name}} <small>(live)</small></h1>
{{if .Run.Description}}<p>{{.Run.Description}}</p>{{end}}
<p id="progress"><progress value="{{.Progress.Done}}" max="{{.Progress.Total}}"></progress><br>
{{if not .Progress.Total}}<b id="done">waiting for the run to start</b> (its manifest is not written yet).{{else}}<b id="done">{{.Progress.Done}} of {{.Progress.Total}} cells complete</b>{{if .Progress.Finished}}: the run is over. <a href="files/report.html">The report</a>.{{else}}, {{since .Progress.Started}} since it started, {{left .Progress.Left}}.{{with .Progress.Running}} Running: {{range $i, $c := .}}{{if $i}}, {{end}}{{$c}}{{end}}.{{end}} {{end}}{{end}}{{if not .Progress.Finished}} This page reloads every 3 s.{{end}}
{{if .Progress.Disturbed}}<span class="fail">{{.Progress.Disturbed}} {{if eq .Progress.Disturbed 1}}cell{{else}}cells{{end}} disturbed by the host</span> (see the quality column).{{end}}</p>
{{if .Run.Rows}}{{template "answer" .}}
{{range multiples .Figures}}<div class="figs{{if gt (len .) 1}} multiples{{end}}">{{range .}}<figure id="{{.Name}}"><img alt="{{.Title}}" src="{{img .SVG}}"><figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption></figure>{{end}}</div>
{{end}}{{template "cells" .}}
<table><tr><th class="l">cell</th><th class="l">quality</th></tr>
{{range .Run.Rows}}<tr><td class="l">{{.Cell}}</td><td class="l {{if eq (.Label "quality") "clean" ""}}pass{{else}}fail{{end}}">{{with .Label "quality"}}{{.}}{{else}}clean{{end}}</td></tr>
{{end}}</table>{{else}}<p>No cell is complete yet.</p>{{end}}
<p>Data: <a href="files/summary.csv">summary.csv</a>, <a href="files/summary.json">summary.json</a>, <a href="status.json">status.json</a>; the run directory is under <a href="files/">files/</a>.</p>
</body></html>`))
