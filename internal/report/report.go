// Package report turns a run directory into plots (SVG and PNG) and a
// self-contained report.html that opens offline: every plot is inlined, no
// script and no remote resource is referenced.
package report

import (
	"encoding/base64"
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

	"go.yaml.in/yaml/v3"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/metrics"
	"tlab/internal/results"
	"tlab/internal/stats"

	"tlab/internal/untrusted"
)

// Run is one run directory's results, as the report needs them.
type Run struct {
	Dir         string
	Name        string
	Description string
	Plots       []string
	Rows        []results.Summary
	Manifest    *results.Manifest
	// Verdicts compare the protocols pair by pair (package stats).
	Verdicts []stats.Comparison
	// UnreachableP is the analysis's: no comparison could be significant,
	// the best could give this p-value at the smallest (0: not so).
	UnreachableP float64
	// Replay compares a remote run's real path with its recording, per
	// protocol (Profile names the protocol, A the path, B the recording).
	Replay []stats.Comparison
	// Requirements are the application's ("METRIC OP BOUND" each, the
	// first the priority): the run's, from its manifest, or those a
	// comparison of runs was given.
	Requirements []string
	// Answers say, for the requirements, which stack meets them on each
	// network (package advise); the page's "In short" names the stacks
	// that meet them on every network (of every run, in a comparison).
	Answers []advise.Answer
	// Load says what cross traffic adds to each stack's delay, where the
	// run sweeps cross.flows from 0.
	Load []analysis.LoadEffect
	// analysis is what Build renders (nil: the rows alone), and cells
	// its record series as plot points.
	analysis *analysis.Analysis
	cells    map[string]*cellSeries
}

// runOf is a run directory's Run as its manifest (nil: none yet, or a
// format-1 directory) describes it, without its rows.
func runOf(dir string, m *results.Manifest) *Run {
	r := &Run{Dir: dir, Name: filepath.Base(filepath.Clean(dir)), Manifest: m}
	if m != nil {
		if m.Scenario != "" {
			r.Name = m.Scenario
		}
		r.Description, r.Plots, r.Requirements = m.Description, m.Plots, m.Requirements
	}
	return r
}

// cellSeries is what the plots draw of a cell's records: the analysis's
// reduction (analysis.CellSeries) as plot points.
type cellSeries struct {
	cdf    plotter.XYs
	ccdf   plotter.XYs
	series plotter.XYs
	peaks  plotter.XYs
	// samples are every measured record's (send time, delay), thinned
	// to analysis.MaxSamples.
	samples plotter.XYs
}

// seriesBins is how many time bins a cell's delay-over-time line has.
const seriesBins = analysis.SeriesBins

// Load reads a run directory through package results: the manifest says
// the run's name, description, swept fields and plots (older directories,
// whose manifest lacks them, are read with every plot their rows support).
func Load(dir string) (*Run, error) {
	rr, err := results.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return FromRun(rr)
}

// FromRun is the report's view of a run directory already read: its rows
// and manifest as given. The records are the analysis's to read: Build
// draws what it made of them.
func FromRun(rr *results.Run) (*Run, error) {
	dir := rr.Dir
	r := runOf(dir, rr.Manifest)
	r.Rows = rr.Rows
	if r.Manifest == nil || r.Manifest.Format < 2 {
		// Format 1 kept the name, description and plots only in the
		// scenario file: read those three fields, leniently, since the
		// file need not be valid for today's tlab.
		var legacy struct {
			Name        string   `yaml:"name"`
			Description string   `yaml:"description"`
			Plots       []string `yaml:"plots"`
		}
		if b, err := untrusted.ReadFile(filepath.Join(dir, results.ScenarioFile), results.MaxScenarioFile); err == nil && yaml.Unmarshal(b, &legacy) == nil {
			if legacy.Name != "" {
				r.Name = legacy.Name
			}
			r.Description, r.Plots = legacy.Description, legacy.Plots
		}
	}
	if len(r.Plots) == 0 {
		r.Plots = Supported(r.Rows)
	}
	return r, nil
}

// seriesOf turns the analysis's reduced records into plot points.
func seriesOf(a *analysis.Analysis) map[string]*cellSeries {
	out := map[string]*cellSeries{}
	if a == nil {
		return out
	}
	xys := func(pts []analysis.Point) plotter.XYs {
		if pts == nil {
			return nil
		}
		out := make(plotter.XYs, len(pts))
		for i, p := range pts {
			out[i] = plotter.XY{X: p.X, Y: p.Y}
		}
		return out
	}
	for cell, s := range a.Series {
		out[cell] = &cellSeries{cdf: xys(s.CDF), ccdf: xys(s.CCDF), series: xys(s.Series), peaks: xys(s.Peaks), samples: xys(s.Samples)}
	}
	return out
}

// cellSeriesOf finds a row's reduced records.
func (r *Run) cellSeriesOf(row results.Summary) *cellSeries {
	if cs, ok := r.cells[row.Cell]; ok {
		return cs
	}
	return r.cells[row.Protocol+"|"+row.Profile]
}

// comboLabel names a row's swept values ("5ms / 128"), or "" without a
// matrix.
func comboLabel(row results.Summary) string {
	var vals []string
	for _, p := range row.Params {
		vals = append(vals, p.Value)
	}
	return strings.Join(vals, " / ")
}

func comboAxis(rows []results.Summary) string {
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
func ordered(rows []results.Summary, f func(results.Summary) string) []string {
	var out []string
	for _, r := range rows {
		if v := f(r); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Build writes plots/ and report.html into the run directory, showing the
// run's analysis (computed and written before, by package analysis: the
// report reads no records and computes no comparison, interval or
// score), and returns the report's path. Without an analysis (nil) it
// shows the rows alone.
func Build(r *Run, a *analysis.Analysis) (string, error) {
	// The run directory may be one received from elsewhere (a tarball
	// keeps links): plots/ and report.html are written inside it only,
	// never through a link planted there.
	root, err := os.OpenRoot(r.Dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	if err := results.MkdirIn(root, "plots"); err != nil {
		return "", err
	}
	r.analysis, r.cells = a, seriesOf(a)
	if a != nil {
		r.Verdicts, r.Load, r.Replay, r.Answers = a.Verdicts, a.Load, a.Replay, a.Answers
		r.UnreachableP = a.UnreachableP
		r.Requirements = a.RequirementTexts()
	}
	figs, notes, err := r.figures(filepath.Join(r.Dir, "plots"))
	if err != nil {
		return "", err
	}
	return filepath.Join(r.Dir, "report.html"), results.WriteAtomicIn(root, "report.html", func(w io.Writer) error { return writeHTML(w, r, figs, notes) })
}

// figures makes every plot the run asked for, kind by kind, each for every
// profile (network) of the run. A kind the registry does not know, or
// whose fields the rows lack, is skipped with a note in the report.
func (r *Run) figures(dir string) ([]Figure, []string, error) {
	var figs []Figure
	var notes []string
	profiles := ordered(r.Rows, func(s results.Summary) string { return s.Profile })
	axis := comboAxis(r.Rows)
	for _, kind := range r.Plots {
		spec, err := results.ParsePlotSpec(kind)
		k, ok := plotKinds[spec.Kind]
		if err != nil || !ok {
			notes = append(notes, fmt.Sprintf("plot %q: this tlab does not know it", kind))
			continue
		}
		if missing := k.missing(r.Rows); len(missing) > 0 {
			notes = append(notes, fmt.Sprintf("plot %q: the rows lack %s", kind, strings.Join(missing, ", ")))
			continue
		}
		// A figure at a study's fixed values (kind@key=value) draws the
		// rows swept at them only, under a stem and title of its own.
		stemKind, fixes := spec.Kind, spec.Fixes()
		if fixes != "" {
			stemKind = results.SafeName(kind)
		}
		drawn := 0
		for pi, profile := range profiles {
			var rows []results.Summary
			for _, row := range r.Rows {
				if row.Profile == profile && spec.Keeps(row) {
					rows = append(rows, row)
				}
			}
			if len(rows) == 0 {
				continue
			}
			pn := panel{
				run: r, dir: dir, profile: profile, rows: rows, axis: axis,
				cats:   ordered(rows, comboLabel),
				protos: ordered(rows, func(s results.Summary) string { return s.Protocol }),
				stem:   fmt.Sprintf("%s-%d-%s", stemKind, pi+1, results.SafeName(profile)),
				fixed:  spec.Fixed,
			}
			fs, err := k.Draw(pn)
			if err != nil {
				return nil, nil, fmt.Errorf("plot %s, %s: %w", kind, profile, err)
			}
			for i := range fs {
				if fixes != "" {
					fs[i].Title += " (" + fixes + ")"
				}
				fs[i].Kind = kind
			}
			drawn += len(fs)
			figs = append(figs, fs...)
		}
		if drawn == 0 && fixes != "" {
			notes = append(notes, fmt.Sprintf("plot %q: no row is swept at %s", kind, fixes))
		}
	}
	return figs, notes, nil
}

// shownWarnings is how many of a run's warnings the report shows before
// folding the rest.
const shownWarnings = 3

// pageStyle is the CSS of every tlab HTML page: inline, so that a report
// is one file that works offline.
const pageStyle template.CSS = `body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#222}
h1{margin-bottom:.2em} h2{margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{padding:3px 5px;border-bottom:1px solid #eee;text-align:right}
th{background:#f6f6f6;position:sticky;top:0} td.l,th.l{text-align:left}
.pass{color:#1a7f37}.fail{color:#cf222e;font-weight:bold}
figure{margin:1.5em 0} figure img{width:100%;height:auto;border:1px solid #eee}
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(460px,1fr));column-gap:1.2em}
.multiples figure{margin:.8em 0}
.wide{overflow-x:auto;max-height:80vh}
figcaption{font-size:13px;color:#555}
.meta td{text-align:left}
`

// powerNote says when no comparison could have been significant (the
// analysis's UnreachableP): too few repetitions for the test, whatever
// the data.
func powerNote(unreachableP float64) string {
	if unreachableP <= 0 {
		return ""
	}
	return fmt.Sprintf("No comparison here could be significant: with this few repetitions the smallest p-value a Mann-Whitney test can give is %.2g, above %.2g before any correction. The intervals still say how far apart the stacks are; run more repetitions (at least 4 against 4, and more for Holm's correction over many comparisons) for verdicts.", unreachableP, stats.Alpha)
}

// imgURL inlines an SVG figure as a data URI.
func imgURL(svg []byte) template.URL {
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(svg))
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"hasChecks": func(stacks []advise.Stack) bool {
		for _, s := range stacks {
			if len(s.Checks) > 0 {
				return true
			}
		}
		return false
	},
	"hasQoO": func(stacks []advise.Stack) bool {
		for _, s := range stacks {
			if s.QoO != nil {
				return true
			}
		}
		return false
	},
	"qooProfile": func(answers []advise.Answer) string {
		for _, a := range answers {
			for _, s := range a.Stacks {
				if s.QoO != nil {
					return s.QoO.Profile
				}
			}
		}
		return ""
	},
	"everywhere": advise.EverywhereSentence,
	"num": func(v float64, prec int) string {
		switch {
		case math.IsNaN(v):
			return "–"
		case math.IsInf(v, 1):
			return "inf"
		case math.IsInf(v, -1):
			return "-inf"
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	},
	"img":       imgURL,
	"multiples": smallMultiples,
	"called": func(vs []stats.Comparison) int {
		n := 0
		for _, v := range vs {
			if v.Significant() {
				n++
			}
		}
		return n
	},
	"powerNote": powerNote,
	"congestion": func(r *Run) string {
		// Rows of protocols that do not run over TCP have no value.
		used := slices.DeleteFunc(ordered(r.Rows, func(s results.Summary) string { return s.Label("tcp_congestion") }),
			func(v string) bool { return v == "" })
		switch len(used) {
		case 0:
			return "none (no protocol over TCP)"
		case 1:
			return used[0] + " in every row over TCP"
		}
		return strings.Join(used, ", ") + " (see each row)"
	},
	"cell":  func(row results.Summary, name string) string { return metrics.Default.Format(name, row.Float(name)) },
	"combo": comboLabel,
	"when":  func(t time.Time) string { return t.Format("2006-01-02 15:04 MST") },
	"style": func() template.CSS { return pageStyle },
	// A run beside other work can warn once per cell (48 warnings for
	// quick beside a test suite): the first few stay in view above the
	// answer, the rest fold away under a line that counts them.
	"shownWarnings": func() int { return shownWarnings },
	"moreWarnings":  func(n int) string { return fmt.Sprintf("%d more warnings", n-shownWarnings) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>tlab report: {{.Run.Name}}</title>
<style>{{style}}</style></head><body>
<h1>{{.Run.Name}}</h1>
{{if .Run.Description}}<p>{{.Run.Description}}</p>{{end}}
{{with .Run.Manifest}}{{range $i, $w := .Warnings}}{{if lt $i shownWarnings}}<p class="fail">Warning: {{$w}}</p>
{{end}}{{end}}{{if gt (len .Warnings) shownWarnings}}<details><summary class="fail">{{moreWarnings (len .Warnings)}}</summary>
{{range $i, $w := .Warnings}}{{if ge $i shownWarnings}}<p class="fail">Warning: {{$w}}</p>
{{end}}{{end}}</details>
{{end}}{{end}}
{{template "answer" .}}
<h2>Run</h2>
<table class="meta">
{{with .Run.Manifest}}
<tr><th class="l">tool</th><td>{{.Tool}}{{with .Commit}} {{.}}{{end}}{{if .Modified}} (modified){{end}}, {{.Go}}</td></tr>
<tr><th class="l">machine</th><td>{{.Hostname}}: {{.CPU}}, {{.Cores}} cores, kernel {{.Kernel}}</td></tr>
<tr><th class="l">started</th><td>{{when .Started}}{{range .Resumed}}; resumed {{when .}}{{end}}{{with .Finished}}; finished {{when .}}{{end}}</td></tr>
<tr><th class="l">scenario</th><td>{{.Scenario}} ({{.ScenarioFile}}), {{.Cells}} cells, seed {{.Seed}}</td></tr>
<tr><th class="l">TCP congestion control</th><td>{{congestion $.Run}} (kernel default: {{index .Sysctls "net.ipv4.tcp_congestion_control"}})</td></tr>
{{end}}
<tr><th class="l">cells reported</th><td>{{len .Run.Rows}}</td></tr>
</table>
{{if .Run.Verdicts}}<h2>Verdicts</h2>
<p><b>{{called .Run.Verdicts}} of {{len .Run.Verdicts}} comparisons call a difference.</b>{{with powerNote .Run.UnreachableP}} {{.}}{{end}}</p>
<p>Each pair of protocols on the same network and swept values: the difference of medians (B − A) with a 95 % bootstrap interval, and the Mann-Whitney test's p-value after Holm's correction over the whole run; a difference is called when that p-value is under 0.05 and the interval excludes zero. The sampling unit is the repetition where cells are repeated, the request otherwise (requests are not independent: such p-values are optimistic). comparisons.csv has every figure (Hodges-Lehmann shift, Cliff's delta, U).</p>
<details{{if le (len .Run.Verdicts) 30}} open{{end}}><summary>the {{len .Run.Verdicts}} comparisons</summary>
<div class="wide"><table><tr><th class="l">network</th><th class="l">swept</th><th class="l">metric</th><th class="l">A</th><th class="l">B</th><th>median A</th><th>median B</th><th>mean B/A (95 % CI)</th><th>p (Holm)</th><th class="l">verdict</th></tr>
{{range .Run.Verdicts}}<tr><td class="l">{{.Profile}}</td><td class="l">{{.Params}}</td><td class="l">{{.Metric}}</td><td class="l">{{.A}}</td><td class="l">{{.B}}</td><td>{{num .MedianA 3}}</td><td>{{num .MedianB 3}}</td><td>{{num .Ratio 3}} ({{num .RatioLow 3}}–{{num .RatioHigh 3}})</td><td>{{num .PHolm 4}}</td><td class="l">{{.Verdict}}</td></tr>
{{end}}</table></div></details>{{end}}
{{with .Run.Manifest}}{{with .Remote}}<h2>A real path</h2>
<p>Every cell crossed the real network to the tlab agent at <b>{{.Address}}</b> ({{.Hostname}}, identity {{.Fingerprint}}): its servers ran there, the clients here. {{with .Emulated}}<b>Real and emulated:</b> the network from this machine to the agent was real; in front of it, on this machine, tlab emulated a link (the clients in a namespace of their own, routed out through it): <b>{{.}}</b>. The bytes on the wire and the emulator's figures are that emulated link's alone; what the real path did is in the delays, not in them.{{else}}Nothing was emulated, so the bytes on the wire and the emulator's figures are not measured (empty).{{end}} The path and both machines, as measured at each start and at the end (20 pings; the agent's clock offset is within ± half the smallest round trip; only frames' one-way delays read both clocks, corrected by this offset, with owd_offset_uncertainty_ms beside them):</p>
<table><tr><th class="l">when</th><th class="l">phase</th><th>RTT min ms</th><th>RTT median ms</th><th>clock offset ms</th><th>± ms</th><th>agent wake-up p99 µs</th><th>agent steal %</th><th>local wake-up p99 µs</th><th>local steal %</th></tr>
{{range .Checks}}<tr><td class="l">{{when .When}}</td><td class="l">{{.Phase}}</td><td>{{num .RTTMinMs 2}}</td><td>{{num .RTTMedianMs 2}}</td><td>{{num .OffsetMs 2}}</td><td>{{num .UncertaintyMs 2}}</td><td>{{num .AgentNoise.WakeP99Us 0}}</td><td>{{num .AgentNoise.StealPct 1}}</td><td>{{num .LocalNoise.WakeP99Us 0}}</td><td>{{num .LocalNoise.StealPct 1}}</td></tr>
{{end}}</table>{{with .ClockDriftWarning}}<p class="fail">{{.}}.</p>{{end}}{{end}}{{end}}
{{if .Run.Load}}<h2>Latency under load</h2>
<p>What the cross traffic (cross.flows bulk flows beside the workload, on the same bottleneck) adds to each stack's delay (a response's, a frame's round trip, an MQTT message's), per network and queue: the loaded cell against its unloaded twin (cross.flows 0), same seed. p50: the difference of medians with its 95 % bootstrap interval (over requests, or over repetitions where cells repeat), called when Holm's p is under 0.05 and the interval excludes zero; p99: the difference of the cells' 99th percentiles (means over repetitions). In load.csv.</p>
<div class="wide"><table><tr><th class="l">network</th><th class="l">protocol</th><th class="l">swept</th><th>flows</th><th>p50 unloaded</th><th>p50 loaded</th><th>adds p50 (95 % CI)</th><th>p99 unloaded</th><th>p99 loaded</th><th>adds p99</th><th class="l">verdict</th><th class="l">p99 of</th></tr>
{{range .Run.Load}}<tr><td class="l">{{.Network}}</td><td class="l">{{.Protocol}}</td><td class="l">{{.Swept}}</td><td>{{.Flows}}</td><td>{{num .BaseP50 2}}</td><td>{{num .LoadedP50 2}}</td><td>{{num .AddedP50 2}} ({{num .Low 2}}–{{num .High 2}})</td><td>{{num .BaseP99 2}}</td><td>{{num .LoadedP99 2}}</td><td>{{num .AddedP99 2}}</td><td class="l">{{.Verdict}}</td><td class="l">{{.Tail}}</td></tr>
{{end}}</table></div>{{end}}
{{if .Run.Replay}}<h2>The replay against the real path</h2>
<p>Every cell ran across the real path and on its recording (tlab record's profile), alternately. For each protocol, the recording's figures (B) against the path's (A), at the median and, for the record delay, at the 99th percentile too (the requests of every repetition pooled; a request that never completed counts as later than any): a difference is called when Holm's p is under 0.05 and the interval excludes zero; "no significant difference" is where the replay agrees with reality within tlab's intervals.</p>
<div class="wide"><table><tr><th class="l">protocol</th><th class="l">swept</th><th class="l">metric</th><th>at</th><th>path</th><th>replay</th><th>difference (95 % CI)</th><th>p (Holm)</th><th class="l">verdict</th></tr>
{{range .Run.Replay}}<tr><td class="l">{{.Profile}}</td><td class="l">{{.Params}}</td><td class="l">{{.Metric}}</td><td>{{if eq .Quantile 0.99}}p99{{else}}p50{{end}}</td><td>{{num .MedianA 3}}</td><td>{{num .MedianB 3}}</td><td>{{num .Diff 3}} ({{num .DiffLow 3}}–{{num .DiffHigh 3}})</td><td>{{num .PHolm 4}}</td><td class="l">{{.Verdict}}</td></tr>
{{end}}</table></div>{{end}}
{{range .Sections}}<h2 id="step-{{.Step}}">{{.Title}}</h2>
{{with .Text}}<p>{{.}}</p>{{end}}
{{if .Header}}<div class="wide"><table><tr>{{range .Header}}<th class="l">{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td class="l">{{.}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}
{{end}}{{with .Run.Manifest}}{{if .Merged}}<h2>Machines (merged from {{len .Merged}} shards)</h2>
<table class="meta"><tr><th class="l">shard</th><th class="l">machine</th><th class="l">cells</th><th class="l">opening calibration</th></tr>
{{range .Merged}}<tr><td>{{.Shard}}</td><td>{{.Hostname}}: {{.CPU}}, kernel {{.Kernel}}</td><td>{{len .Cells}}</td><td>{{range .Calibrations}}{{.Verdict}} {{end}}</td></tr>
{{end}}</table>{{end}}{{end}}
{{with .Run.Manifest}}{{range .Calibrations}}
<h2>Emulator calibration ({{when .Started}}, mode {{.Mode}}{{with .Engine}}, engine {{.}}{{end}})</h2>
<table><tr><th class="l">check</th><th>value</th><th class="l">unit</th><th class="l">target</th><th class="l">result</th></tr>
{{range .Checks}}<tr><td class="l">{{.Name}}</td><td>{{.ValueText}}</td><td class="l">{{.Unit}}</td><td class="l">{{.Target}}</td><td class="l {{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}pass{{else if .Inconclusive}}inconclusive{{else}}FAIL{{if .Host}} (host){{end}}{{end}}</td></tr>
{{end}}</table>
{{range .Warnings}}<p class="fail">{{.}}</p>{{end}}
{{if eq .Verdict "host"}}<p>Every failed check is explained by the host's own noise in the same step (FAIL (host)): the host was too noisy for tlab's targets; the emulator is not at fault.</p>{{else if eq .Verdict "emulator"}}<p class="fail">A failed check is not explained by the host's noise: the emulator was less accurate than tlab's targets.</p>{{end}}
{{end}}{{end}}
<h2>Plots</h2>
{{range multiples .Figures}}<div class="figs{{if gt (len .) 1}} multiples{{end}}">{{range .}}<figure id="{{.Name}}"><img alt="{{.Title}}" src="{{img .SVG}}"><figcaption><b>{{.Title}}.</b> {{.Caption}} (plots/{{.Name}}.svg, .png)</figcaption></figure>{{end}}</div>
{{end}}
{{template "cells" .}}{{range .Notes}}<p class="fail">{{.}}</p>{{end}}
<p>Delays in milliseconds. Column definitions: docs/metrics.md (or hover a column's title); every column is in summary.csv. Data: summary.json, summary.csv, records.csv beside this file.</p>
</body></html>
{{define "answer"}}{{if .Run.Answers}}<h2>The answer</h2>
{{if .Run.Requirements}}<p>Requirements: {{range $i, $r := .Run.Requirements}}{{if $i}}; {{end}}<b>{{$r}}</b>{{end}} (the first is the priority that picks the best). A stack meets a requirement when the 95 % interval (Student's t) of its mean over the repetitions lies inside the bound (with fewer than 3 repetitions, when its value is more than 10 % inside); a disturbed or failed cell cannot decide. A message that never completed counts as a delay beyond any bound (a percentile among them is inf), and a requirement on a mean, which cannot see them, brings failed_pct&lt;=0 with it.</p>{{end}}
{{with everywhere .Run.Answers}}<p><b>In short:</b> {{.}}.</p>{{end}}
{{range .Run.Answers}}<p><b>{{.Profile}}{{with .Params}} ({{.}}){{end}}:</b> {{.Summary}}.{{with .ToDecide}} To decide: {{.}}.{{end}}</p>
{{if hasChecks .Stacks}}<table><tr><th class="l">stack</th><th>failed %</th><th class="l">this requirement</th><th class="l">requirement</th><th>value</th><th>95 % CI</th><th>margin</th><th class="l">why</th></tr>
{{range .Stacks}}{{$s := .}}{{range .Checks}}<tr><td class="l">{{$s.Protocol}}</td><td>{{num $s.FailedPct 1}}</td><td class="l {{if eq (printf "%s" .Status) "meets"}}pass{{else}}fail{{end}}">{{.Status}}</td><td class="l">{{.Requirement}}</td><td>{{num .Value 3}}</td><td>{{num .Low 3}}–{{num .High 3}}</td><td>{{num .Margin 3}}</td><td class="l">{{.Why}}</td></tr>
{{end}}{{end}}</table>{{end}}
{{if hasQoO .Stacks}}<table class="qoo"><tr><th class="l">stack</th><th>Quality of Outcome</th><th>95 % CI</th><th>latency</th><th>loss</th><th class="l">limited by</th><th>repetitions</th></tr>
{{range .Stacks}}{{$s := .}}{{with .QoO}}<tr><td class="l">{{$s.Protocol}}</td><td>{{num .Score 0}}</td><td>{{num .Low 0}}–{{num .High 0}}</td><td>{{num .Latency 0}}</td><td>{{num .Loss 0}}</td><td class="l">{{.Limit}}</td><td>{{.N}}</td></tr>
{{end}}{{end}}</table>{{end}}{{end}}{{with qooProfile .Run.Answers}}<p>Quality of Outcome (draft-ietf-ippm-qoo-09) against the requirement profile <b>{{.}}</b>: 0 unacceptable, 100 optimal; the record delay of the messages that completed and the share that did not, per cell, then the mean over repetitions with its 95 % interval (Student's t, three or more). <code>tlab qoo --describe</code> says where its numbers come from.</p>{{end}}{{end}}
{{end}}
{{define "cells"}}<h2>Every cell</h2>
<div class="wide"><table>
<tr><th class="l">profile</th><th class="l">protocol</th>{{if .Swept}}<th class="l">swept</th>{{end}}{{if .Reps}}<th>rep</th>{{end}}{{range .Columns}}<th title="{{.Definition}}">{{.Header}}</th>{{end}}</tr>
{{range $row := .Run.Rows}}<tr><td class="l">{{.Profile}}</td><td class="l">{{.Protocol}}</td>{{if $.Swept}}<td class="l">{{combo .}}</td>{{end}}{{if $.Reps}}<td>{{.Rep}}</td>{{end}}{{range $.Columns}}<td>{{cell $row .Name}}</td>{{end}}</tr>
{{end}}</table></div>
{{end}}`))

// tableColumns are the "every cell" table's columns: the workload's table
// columns as the manifest lists them (the terminal's, so that the page fits
// without scrolling; summary.csv has every column), and the emulator's
// figures; without such a list, every measured column the rows have.
func tableColumns(rows []results.Summary, m *results.Manifest) []metrics.Metric {
	have := map[string]bool{}
	for _, r := range rows {
		for _, f := range r.Fields {
			have[f.Name] = true
		}
	}
	var cols []metrics.Metric
	if m != nil && len(m.Table) > 0 {
		for _, name := range append(slices.Clone(m.Table), "emu_release_p99_us", "emu_cpu_s", "host_steal_pct", "overlapping_runs", "attempts_discarded") {
			if mt, ok := metrics.Lookup(name); ok && have[name] {
				cols = append(cols, mt)
			}
		}
		return cols
	}
	for _, mt := range metrics.All() {
		if have[mt.Name] && (mt.Kind == metrics.Measured || mt.Kind == metrics.Instrument) {
			cols = append(cols, mt)
		}
	}
	return cols
}

func writeHTML(w io.Writer, r *Run, figs []Figure, notes []string) error {
	// Columns that say nothing (no swept field, one repetition) are left
	// out, so that the table fits the page.
	swept, reps := false, false
	for _, row := range r.Rows {
		swept = swept || len(row.Params) > 0
		reps = reps || row.Rep > 1
	}
	// The steps that render themselves, in their order; the verdicts,
	// the load, the replay and the answer have their places above.
	var sections []analysis.Section
	if r.analysis != nil {
		sections = r.analysis.Sections()
	}
	return page.Execute(w, struct {
		Run         *Run
		Figures     []Figure
		Columns     []metrics.Metric
		Notes       []string
		Sections    []analysis.Section
		Swept, Reps bool
	}{r, figs, tableColumns(r.Rows, r.Manifest), notes, sections, swept, reps})
}
