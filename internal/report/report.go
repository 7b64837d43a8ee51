// Package report turns a run directory into plots (SVG and PNG) and a
// self-contained report.html that opens offline: every plot is inlined, no
// script and no remote resource is referenced.
package report

import (
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"tlab/internal/experiment"
	"tlab/internal/metrics"
	"tlab/internal/scenario"
)

// Run is one run directory's results.
type Run struct {
	Dir         string
	Name        string
	Description string
	Plots       []string
	Rows        []experiment.Summary
	Manifest    *experiment.Manifest
	cells       map[string]*cellSeries
}

// cellSeries is what the plots need of a cell's records, reduced as they
// stream by: quantiles for a CDF and a thinned time series.
type cellSeries struct {
	cdf    plotter.XYs
	series plotter.XYs
}

// maxSeriesPoints thins time series so that an hour-long cell stays light.
const maxSeriesPoints = 1500

// Load reads a run directory (a scenario run or a tlab run --out).
func Load(dir string) (*Run, error) {
	rows, err := experiment.ReadSummaries(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("report: %w (is %s a tlab results directory?)", err, dir)
	}
	r := &Run{Dir: dir, Name: filepath.Base(filepath.Clean(dir)), Rows: rows, Plots: scenario.PlotKinds}
	if sc, err := scenario.Load(filepath.Join(dir, "scenario.yaml")); err == nil {
		r.Name, r.Description, r.Plots = sc.Name, sc.Description, sc.Plots
	}
	if m, err := experiment.ReadManifest(dir); err == nil {
		r.Manifest = m
	}
	if err := r.loadRecords(filepath.Join(dir, "records.csv")); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return r, nil
}

// loadRecords streams records.csv, reducing each cell as it goes (records
// are grouped by cell).
func (r *Run) loadRecords(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"delay_ms", "sent_ms", "warmup"} {
		if _, ok := col[need]; !ok {
			return fmt.Errorf("%s: no column %q", path, need)
		}
	}
	cellCol, hasCell := col["cell"]
	r.cells = map[string]*cellSeries{}
	var cur string
	var delays []float64
	var pts plotter.XYs
	finish := func() {
		if cur == "" {
			return
		}
		r.cells[cur] = reduce(delays, pts)
		delays, pts = delays[:0], nil
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		id := rec[col["protocol"]] + "|" + rec[col["profile"]]
		if hasCell && rec[cellCol] != "" {
			id = rec[cellCol]
		}
		if id != cur {
			finish()
			cur = id
		}
		if rec[col["warmup"]] == "true" || rec[col["delay_ms"]] == "" {
			continue
		}
		d, err1 := strconv.ParseFloat(rec[col["delay_ms"]], 64)
		s, err2 := strconv.ParseFloat(rec[col["sent_ms"]], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		delays = append(delays, d)
		pts = append(pts, plotter.XY{X: s / 1000, Y: d})
	}
	finish()
	return nil
}

func reduce(delays []float64, pts plotter.XYs) *cellSeries {
	cs := &cellSeries{}
	s := slices.Clone(delays)
	slices.Sort(s)
	for i := 0; i <= 200 && len(s) > 0; i++ {
		q := float64(i) / 200
		cs.cdf = append(cs.cdf, plotter.XY{X: metrics.Quantile(s, q), Y: q})
	}
	slices.SortFunc(pts, func(a, b plotter.XY) int { return int(math.Copysign(1, a.X-b.X)) })
	step := max(1, len(pts)/maxSeriesPoints)
	for i := 0; i < len(pts); i += step {
		cs.series = append(cs.series, pts[i])
	}
	return cs
}

// cellSeriesOf finds a row's reduced records.
func (r *Run) cellSeriesOf(row experiment.Summary) *cellSeries {
	if cs, ok := r.cells[row.Cell]; ok {
		return cs
	}
	return r.cells[row.Protocol+"|"+row.Profile]
}

// comboLabel names a row's swept values ("5ms / 128"), or "" without a
// matrix.
func comboLabel(row experiment.Summary) string {
	var vals []string
	for _, p := range row.Params {
		vals = append(vals, p.Value)
	}
	return strings.Join(vals, " / ")
}

func comboAxis(rows []experiment.Summary) string {
	if len(rows) == 0 || len(rows[0].Params) == 0 {
		return ""
	}
	var keys []string
	for _, p := range rows[0].Params {
		keys = append(keys, p.Key[strings.LastIndex(p.Key, ".")+1:])
	}
	return strings.Join(keys, " / ")
}

// ordered returns the distinct values of f over rows, in first-seen order.
func ordered(rows []experiment.Summary, f func(experiment.Summary) string) []string {
	var out []string
	for _, r := range rows {
		if v := f(r); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Build writes plots/ and report.html into the run directory and returns
// the report's path.
func Build(r *Run) (string, error) {
	dir := filepath.Join(r.Dir, "plots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	figs, err := r.figures(dir)
	if err != nil {
		return "", err
	}
	path := filepath.Join(r.Dir, "report.html")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := writeHTML(f, r, figs); err != nil {
		return "", err
	}
	return path, f.Close()
}

// figures makes every plot the run asked for.
func (r *Run) figures(dir string) ([]Figure, error) {
	var figs []Figure
	profiles := ordered(r.Rows, func(s experiment.Summary) string { return s.Profile })
	axis := comboAxis(r.Rows)
	xLabel := axis
	if xLabel == "" {
		xLabel = "protocol"
	}
	const w, h = 8 * vg.Inch, 4 * vg.Inch
	for _, kind := range r.Plots {
		for pi, profile := range profiles {
			var rows []experiment.Summary
			for _, row := range r.Rows {
				if row.Profile == profile {
					rows = append(rows, row)
				}
			}
			cats := ordered(rows, comboLabel)
			protos := ordered(rows, func(s experiment.Summary) string { return s.Protocol })
			stem := fmt.Sprintf("%s-%d-%s", kind, pi+1, safe(profile))
			switch kind {
			case "delay_box":
				stats := map[string]map[string]boxStat{}
				n := map[string]map[string]float64{}
				for _, row := range rows {
					if stats[row.Protocol] == nil {
						stats[row.Protocol], n[row.Protocol] = map[string]boxStat{}, map[string]float64{}
					}
					c := comboLabel(row)
					b := stats[row.Protocol][c]
					k := n[row.Protocol][c]
					// Repetitions: the mean of each quantile.
					avg := func(old, v float64) float64 { return (old*k + v) / (k + 1) }
					b.P5, b.P25, b.P50, b.P75, b.P95 = avg(b.P5, row.DelayP5), avg(b.P25, row.DelayP25), avg(b.P50, row.DelayP50), avg(b.P75, row.DelayP75), avg(b.P95, row.DelayP95)
					stats[row.Protocol][c], n[row.Protocol][c] = b, k+1
				}
				p := groupedBoxes(cats, protos, stats, xLabel, "response delay (ms)")
				fig, err := render(p, dir, stem, "Response delay, "+profile, "Boxes from the 25th to the 75th percentile with the median; whiskers at the 5th and 95th percentiles (study A's box plots).", w, h)
				if err != nil {
					return nil, err
				}
				figs = append(figs, fig)
			case "jitter_bars", "bytes_bars":
				field := func(s experiment.Summary) float64 { return s.JitterPct }
				ylabel, title, caption := "jitter (% of mean delay)", "Jitter, "+profile, "Mean absolute difference between consecutive delays, as a percentage of the mean delay (RFC 4689, study A)."
				if kind == "bytes_bars" {
					field = func(s experiment.Summary) float64 { return s.BytesPerRequest }
					ylabel, title, caption = "bytes on the wire per request", "Data volume per request, "+profile, "All bytes the client sent (Ethernet frames: headers, handshakes, ACKs and control frames included) divided by the requests."
				}
				vals := meanBy(rows, field, comboLabel)
				p, err := groupedBars(cats, protos, vals, xLabel, ylabel)
				if err != nil {
					return nil, err
				}
				fig, err := render(p, dir, stem, title, caption, w, h)
				if err != nil {
					return nil, err
				}
				figs = append(figs, fig)
			case "conns_heatmap":
				for _, proto := range protos {
					if proto != "h1" && proto != "h1s" {
						continue
					}
					fig, err := connsHeatmap(rows, proto, profile, dir, stem+"-"+proto)
					if err != nil {
						return nil, err
					}
					if fig != nil {
						figs = append(figs, *fig)
					}
				}
			case "delay_cdf", "timeseries":
				for ci, cat := range cats {
					if ci >= 6 {
						break // enough to read; the records hold the rest
					}
					pts := map[string]plotter.XYs{}
					for _, row := range rows {
						if comboLabel(row) != cat || row.Rep > 1 {
							continue
						}
						if cs := r.cellSeriesOf(row); cs != nil {
							if kind == "delay_cdf" {
								pts[row.Protocol] = cs.cdf
							} else {
								pts[row.Protocol] = cs.series
							}
						}
					}
					if len(pts) == 0 {
						continue
					}
					label := profile
					if cat != "" {
						label += ", " + axis + " " + cat
					}
					var p interface {
						Save(vg.Length, vg.Length, string) error
					}
					_ = p
					var fig Figure
					var err error
					if kind == "delay_cdf" {
						pl, lerr := lines(protos, pts, "response delay (ms)", "fraction of requests")
						if lerr != nil {
							return nil, lerr
						}
						fig, err = render(pl, dir, fmt.Sprintf("%s-%d", stem, ci+1), "Delay CDF, "+label, "Empirical distribution of the response delay (first repetition).", w, h)
					} else {
						pl, lerr := lines(protos, pts, "time since the cell started (s)", "response delay (ms)")
						if lerr != nil {
							return nil, lerr
						}
						fig, err = render(pl, dir, fmt.Sprintf("%s-%d", stem, ci+1), "Delay over time, "+label, "Response delay of each request by the time it was sent (first repetition; long cells thinned).", w, h)
					}
					if err != nil {
						return nil, err
					}
					figs = append(figs, fig)
				}
			}
		}
	}
	return figs, nil
}

// meanBy averages a value per protocol and category over repetitions.
func meanBy(rows []experiment.Summary, v func(experiment.Summary) float64, cat func(experiment.Summary) string) map[string]map[string]float64 {
	sum := map[string]map[string]float64{}
	n := map[string]map[string]float64{}
	for _, r := range rows {
		if sum[r.Protocol] == nil {
			sum[r.Protocol], n[r.Protocol] = map[string]float64{}, map[string]float64{}
		}
		x := v(r)
		if math.IsNaN(x) {
			continue
		}
		sum[r.Protocol][cat(r)] += x
		n[r.Protocol][cat(r)]++
	}
	for p, m := range sum {
		for c := range m {
			m[c] /= n[p][c]
		}
	}
	return sum
}

// connsHeatmap plots HTTP/1.1 connections per 1000 requests by interval
// (columns) and payload (rows), as study A does.
func connsHeatmap(rows []experiment.Summary, proto, profile, dir, stem string) (*Figure, error) {
	var ivs, pls []float64
	val := map[[2]float64][]float64{}
	for _, r := range rows {
		if r.Protocol != proto || math.IsNaN(r.ConnsPer1000) {
			continue
		}
		if !slices.Contains(ivs, r.IntervalMs) {
			ivs = append(ivs, r.IntervalMs)
		}
		if !slices.Contains(pls, float64(r.ReqSize)) {
			pls = append(pls, float64(r.ReqSize))
		}
		k := [2]float64{r.IntervalMs, float64(r.ReqSize)}
		val[k] = append(val[k], r.ConnsPer1000)
	}
	if len(ivs) == 0 {
		return nil, nil
	}
	slices.Sort(ivs)
	slices.Sort(pls)
	g := grid{cols: ivs, rows: pls, values: make([][]float64, len(pls))}
	var colNames, rowNames []string
	for _, iv := range ivs {
		colNames = append(colNames, strconv.FormatFloat(iv, 'f', -1, 64)+" ms")
	}
	for ri, pl := range pls {
		rowNames = append(rowNames, strconv.FormatFloat(pl, 'f', -1, 64)+" B")
		g.values[ri] = make([]float64, len(ivs))
		for ci, iv := range ivs {
			vs := val[[2]float64{iv, pl}]
			if len(vs) == 0 {
				g.values[ri][ci] = math.NaN()
				continue
			}
			g.values[ri][ci] = metrics.Describe(vs).Mean
		}
	}
	p, err := heatmap(g, "request interval", "payload", colNames, rowNames)
	if err != nil {
		return nil, err
	}
	fig, err := render(p, dir, stem, "Connections per 1000 requests, "+proto+", "+profile,
		"Transport connections the HTTP/1.1 client established per 1000 requests, by interval and payload (study A).", 6*vg.Inch, 4*vg.Inch)
	return &fig, err
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, strings.ToLower(s))
}

// pageStyle is the CSS of every tlab HTML page: inline, so that a report
// is one file that works offline.
const pageStyle template.CSS = `body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{margin-bottom:.2em} h2{margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right}
th{background:#f6f6f6;position:sticky;top:0} td.l,th.l{text-align:left}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:bold}
figure{margin:1.5em 0} figure img{width:100%;height:auto;border:1px solid #eee}
.wide{overflow-x:auto;max-height:80vh}
figcaption{font-size:13px;color:#555}
.meta td{text-align:left}
`

// imgURL inlines an SVG figure as a data URI.
func imgURL(svg []byte) template.URL {
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg))
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"num": func(v float64, prec int) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	},
	"img":   imgURL,
	"combo": comboLabel,
	"when":  func(t time.Time) string { return t.Format("2006-01-02 15:04 MST") },
	"style": func() template.CSS { return pageStyle },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>tlab report: {{.Run.Name}}</title>
<style>{{style}}</style></head><body>
<h1>{{.Run.Name}}</h1>
{{if .Run.Description}}<p>{{.Run.Description}}</p>{{end}}
<h2>Run</h2>
<table class="meta">
{{with .Run.Manifest}}
<tr><th class="l">tool</th><td>{{.Tool}} {{.Commit}}{{if .Modified}} (modified){{end}}, {{.Go}}</td></tr>
<tr><th class="l">machine</th><td>{{.Hostname}}: {{.CPU}}, {{.Cores}} cores, kernel {{.Kernel}}</td></tr>
<tr><th class="l">started</th><td>{{when .Started}}{{range .Resumed}}; resumed {{when .}}{{end}}{{with .Finished}}; finished {{when .}}{{end}}</td></tr>
<tr><th class="l">scenario</th><td>{{.Scenario}} ({{.ScenarioFile}}), {{.Cells}} cells, seed {{.Seed}}</td></tr>
<tr><th class="l">TCP congestion control</th><td>{{index .Sysctls "net.ipv4.tcp_congestion_control"}} (kernel default; each result row records the one it used)</td></tr>
{{end}}
<tr><th class="l">cells reported</th><td>{{len .Run.Rows}}</td></tr>
</table>
{{with .Run.Manifest}}{{range .Calibrations}}
<h2>Emulator calibration ({{when .Started}}, mode {{.Mode}})</h2>
<table><tr><th class="l">check</th><th>value</th><th class="l">unit</th><th class="l">target</th><th class="l">result</th></tr>
{{range .Checks}}<tr><td class="l">{{.Name}}</td><td>{{.Value}}</td><td class="l">{{.Unit}}</td><td class="l">{{.Target}}</td><td class="l {{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}pass{{else}}FAIL{{end}}</td></tr>
{{end}}</table>
{{range .Warnings}}<p class="fail">{{.}}</p>{{end}}
{{end}}{{end}}
<h2>Plots</h2>
{{range .Figures}}<figure id="{{.Name}}"><img alt="{{.Title}}" src="{{img .SVG}}"><figcaption><b>{{.Title}}.</b> {{.Caption}} (plots/{{.Name}}.svg, .png)</figcaption></figure>
{{end}}
<h2>Every cell</h2>
<div class="wide"><table>
<tr><th class="l">profile</th><th class="l">protocol</th><th class="l">swept</th><th>rep</th><th>requests</th><th>p5</th><th>p25</th><th>p50</th><th>p75</th><th>p95</th><th>p99</th><th>mean</th><th>std</th><th>jitter %</th><th>B/req</th><th>B/resp</th><th>conn/1000</th><th>late</th><th>errors</th><th>unsent</th><th>emu p99 µs</th></tr>
{{range .Run.Rows}}<tr><td class="l">{{.Profile}}</td><td class="l">{{.Protocol}}</td><td class="l">{{combo .}}</td><td>{{.Rep}}</td><td>{{.Requests}}</td>
<td>{{num .DelayP5 2}}</td><td>{{num .DelayP25 2}}</td><td>{{num .DelayP50 2}}</td><td>{{num .DelayP75 2}}</td><td>{{num .DelayP95 2}}</td><td>{{num .DelayP99 2}}</td><td>{{num .DelayMean 2}}</td><td>{{num .DelayStd 2}}</td>
<td>{{num .JitterPct 1}}</td><td>{{num .BytesPerRequest 0}}</td><td>{{num .BytesPerResponse 0}}</td><td>{{num .ConnsPer1000 1}}</td><td>{{.LateSends}}</td><td>{{.Errors}}</td><td>{{.Unsent}}</td><td>{{num .EmuReleaseP99Us 0}}</td></tr>
{{end}}</table></div>
<p>Delays in milliseconds. Column definitions: docs/metrics.md. Data: summary.json, summary.csv, records.csv beside this file.</p>
</body></html>
`))

func writeHTML(w io.Writer, r *Run, figs []Figure) error {
	return page.Execute(w, struct {
		Run     *Run
		Figures []Figure
	}{r, figs})
}
