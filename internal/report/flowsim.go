package report

import (
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"tlab/internal/flowsim"
	tlresults "tlab/internal/results"
	"tlab/internal/units"
)

// FlowsimPlots draws study C's plots for results of one scenario into dir:
// bytes received over time and the maximum stream window over time (one
// line per allowance), or, for the size sweep, transfer time by data size
// (sizes[i % len(sizes)] is result i's data size). When results include a
// real stack's measurements, the same plots are drawn a second time with
// only the quic-go settings, simulated (dashed) beside measured (solid),
// under the stem prefix "quic-go-". It returns the figures written.
func FlowsimPlots(dir, scenario string, results []flowsim.Result, sizes []int64) ([]Figure, error) {
	label := flowsimLabels(results)
	var study, quicGo []int
	for i, r := range results {
		if l := label(r); l == r.Allowance {
			study = append(study, i)
		} else {
			quicGo = append(quicGo, i)
		}
	}
	files, err := flowsimSet(dir, "", scenario, results, study, sizes, label)
	if err != nil || len(quicGo) == 0 {
		return files, err
	}
	more, err := flowsimSet(dir, "quic-go-", scenario+", quic-go simulated and measured", results, quicGo, sizes, label)
	return append(files, more...), err
}

// flowsimSet draws one set of plots from the results at indices.
func flowsimSet(dir, prefix, title string, results []flowsim.Result, indices []int, sizes []int64, label func(flowsim.Result) string) ([]Figure, error) {
	if len(indices) == 0 {
		return nil, nil
	}
	const w, h = 7 * vg.Inch, 3.5 * vg.Inch
	var names []string
	var out []Figure
	if len(sizes) > 0 {
		pts := map[string]plotter.XYs{}
		for _, i := range indices {
			r := results[i]
			name := label(r)
			pts[name] = append(pts[name], plotter.XY{X: float64(sizes[i%len(sizes)]) / 1e6, Y: r.CompletionS})
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		p, err := lines(names, pts, "data size (MB)", "transfer time (s)")
		if err != nil {
			return nil, err
		}
		// Sizes and times both span two to three decades.
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Max *= 4 // room for the legend on a log axis
		f, err := render(p, dir, prefix+"transfer-time-by-size", "Transfer time by data size, "+title, "", w, h)
		if err != nil {
			return nil, err
		}
		return []Figure{f}, nil
	}
	recv := map[string]plotter.XYs{}
	win := map[string]plotter.XYs{}
	sum := map[string]plotter.XYs{}
	for _, i := range indices {
		r := results[i]
		name := label(r)
		names = append(names, name)
		for _, s := range r.Series {
			var total int64
			for _, b := range s.Received {
				total += b
			}
			recv[name] = append(recv[name], plotter.XY{X: s.T.Seconds(), Y: float64(total) / 1e6})
			win[name] = append(win[name], plotter.XY{X: s.T.Seconds(), Y: float64(s.MaxStreamWindow) / 1024})
			sum[name] = append(sum[name], plotter.XY{X: s.T.Seconds(), Y: float64(s.StreamWindowSum) / 1024})
		}
	}
	for _, pl := range []struct {
		stem, title, y string
		pts            map[string]plotter.XYs
	}{
		{"received-over-time", "Bytes received over time, " + title, "received (MB, all streams)", recv},
		{"window-over-time", "Maximum stream receive window over time, " + title, "window (KiB)", win},
		// Study C's Figs. 7b-9b: the streams' receive windows summed.
		{"window-sum-over-time", "Sum of the streams' receive windows over time, " + title, "window (KiB, all streams)", sum},
	} {
		p, err := lines(names, pl.pts, "time (s)", pl.y)
		if err != nil {
			return nil, err
		}
		f, err := render(p, dir, prefix+pl.stem, pl.title, "", w, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pl.stem, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// flowsimLabels names each result's line: its allowance, with "(measured)"
// for a real stack's and "(sim)" for a simulated one that shares its name
// with a measured one.
func flowsimLabels(results []flowsim.Result) func(flowsim.Result) string {
	measured := map[string]bool{}
	for _, r := range results {
		if r.Source != "simulator" {
			measured[r.Allowance] = true
		}
	}
	return func(r flowsim.Result) string {
		switch {
		case r.Source != "simulator":
			return r.Allowance + measuredSuffix
		case measured[r.Allowance]:
			return r.Allowance + simSuffix
		}
		return r.Allowance
	}
}

var flowsimPage = template.Must(template.New("flowsim").Funcs(template.FuncMap{
	"img":   imgURL,
	"style": func() template.CSS { return pageStyle },
	"size":  func(b int64) string { return units.Size(b).String() },
	"sim":   func(r flowsim.Result) bool { return r.Source == "simulator" },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>tlab flowsim: {{.Scenario}}</title>
<style>{{style}}</style></head><body>
<h1>Flow control: {{.Scenario}}</h1>
<p>{{.Setup}}</p>
<table>
<tr><th class="l">source</th><th class="l">allowance</th><th>data bytes</th><th>throughput Mbit/s</th><th>completion s</th><th>updates</th><th>max stream window</th><th>max conn window</th><th>blocked s</th><th>lost</th></tr>
{{range .Results}}<tr><td class="l">{{.Source}}</td><td class="l">{{.Allowance}}</td><td>{{.BytesTotal}}</td><td>{{printf "%.2f" .ThroughputMbps}}</td><td>{{printf "%.3f" .CompletionS}}</td><td>{{.WindowUpdates}}</td><td>{{size .MaxStreamWin}}</td><td>{{size .MaxConnWin}}</td><td>{{if sim .}}{{printf "%.3f" .BlockedS}}{{else}}–{{end}}</td><td>{{.Retransmits}}</td></tr>
{{end}}</table>
<p>Definitions: docs/flowsim.md. Data: summary.json and series-*.csv beside this file.</p>
{{range .Figures}}<figure id="{{.Name}}"><img alt="{{.Title}}" src="{{img .SVG}}"><figcaption><b>{{.Title}}.</b> ({{.Name}}.svg, .png)</figcaption></figure>
{{end}}
</body></html>
`))

// WriteFlowsimHTML writes dir/report.html: the results table and the
// figures inlined, one file that works offline. setup describes the link
// and the runs in one sentence.
func WriteFlowsimHTML(dir, scenario, setup string, results []flowsim.Result, figs []Figure) error {
	return tlresults.WriteAtomic(filepath.Join(dir, "report.html"), func(w io.Writer) error {
		return flowsimPage.Execute(w, struct {
			Scenario, Setup string
			Results         []flowsim.Result
			Figures         []Figure
		}{scenario, setup, results, figs})
	})
}

// GainMapPlot draws a gain map as a heat map: link rates across, RTTs up,
// each cell fast autotuning's throughput gain over autotuning in per cent,
// and a ring around the cell of the scenario's own link (own, when it is on
// the grid), so that the scenario's choice of link is one point among all.
func GainMapPlot(dir, scenario string, pts []flowsim.GainPoint, ownRate float64, ownRTT time.Duration) (Figure, error) {
	var rates []float64
	var rtts []time.Duration
	for _, p := range pts {
		if !slices.Contains(rates, p.RateBps) {
			rates = append(rates, p.RateBps)
		}
		if !slices.Contains(rtts, p.RTT) {
			rtts = append(rtts, p.RTT)
		}
	}
	g := grid{values: make([][]float64, len(rtts))}
	var cols, rows []string
	for _, r := range rates {
		g.cols = append(g.cols, r)
		cols = append(cols, units.Bitrate(r).String())
	}
	for i, d := range rtts {
		g.rows = append(g.rows, d.Seconds())
		rows = append(rows, d.String())
		g.values[i] = make([]float64, len(rates))
		for j := range g.values[i] {
			g.values[i][j] = math.NaN()
		}
	}
	for _, p := range pts {
		g.values[slices.Index(rtts, p.RTT)][slices.Index(rates, p.RateBps)] = p.GainPct
	}
	p, err := heatmap(g, "link rate", "round-trip time", cols, rows)
	if err != nil {
		return Figure{}, err
	}
	caption := "Throughput of fast autotuning over autotuning, in per cent, on each link (everything else as in " + scenario + ")."
	if c, r := slices.Index(rates, ownRate), slices.Index(rtts, ownRTT); c >= 0 && r >= 0 {
		ring, err := plotter.NewScatter(plotter.XYs{{X: float64(c), Y: float64(r)}})
		if err != nil {
			return Figure{}, err
		}
		ring.GlyphStyle.Shape = draw.RingGlyph{}
		ring.GlyphStyle.Radius = vg.Points(14)
		ring.GlyphStyle.Color = color.Black
		p.Add(ring)
		caption += fmt.Sprintf(" The ring marks the scenario's link (%s, %v).", units.Bitrate(ownRate), ownRTT)
	}
	return render(p, dir, "gain-map", "Where fast autotuning pays off, "+scenario, caption, 7*vg.Inch, 4*vg.Inch)
}
