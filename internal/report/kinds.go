package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"tlab/internal/analysis"
	"tlab/internal/results"
)

// PlotKind is one kind of plot, looked up by name (as flent looks up its
// plotters): the summary fields it needs, and how it draws one network's
// rows. Adding a plot is one registration.
type PlotKind struct {
	Name string
	Doc  string
	// Needs are the summary fields the plot reads; "records" means it
	// draws the per-record delays, as the analysis reduced them
	// (analysis.CellSeries).
	Needs []string
	Draw  func(p panel) ([]Figure, error)
}

// panel is one network's (profile's) share of a run, for one plot kind.
type panel struct {
	run     *Run
	dir     string
	profile string
	rows    []results.Summary
	// cats are the swept values' combinations (x categories), protos the
	// protocols (series), both in first-seen order.
	cats, protos []string
	axis         string
	stem         string
	// fixed are the swept values the figure fixes (kind@key=value), by
	// which a step's figures over those rows are found.
	fixed []results.Param
}

func (p panel) xLabel() string {
	if p.axis == "" {
		return "protocol"
	}
	return p.axis
}

const figW, figH = 8 * vg.Inch, 4 * vg.Inch

var plotKinds = map[string]PlotKind{}

func registerPlot(k PlotKind) {
	if _, dup := plotKinds[k.Name]; dup {
		panic("report: plot " + k.Name + " registered twice")
	}
	plotKinds[k.Name] = k
}

// PlotKinds lists the registered plot kinds, sorted by name.
func PlotKinds() []PlotKind {
	var out []PlotKind
	for _, k := range plotKinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupPlot returns the named plot kind.
func LookupPlot(name string) (PlotKind, bool) {
	k, ok := plotKinds[name]
	return k, ok
}

// missing returns the fields of k.Needs that no row has.
func (k PlotKind) missing(rows []results.Summary) []string {
	var out []string
	for _, n := range k.Needs {
		if n == "records" {
			continue
		}
		found := false
		for _, r := range rows {
			if _, ok := r.Get(n); ok {
				found = true
				break
			}
		}
		if !found {
			out = append(out, n)
		}
	}
	return out
}

// Supported lists the plot kinds whose fields rows have, sorted.
func Supported(rows []results.Summary) []string {
	var out []string
	for _, k := range PlotKinds() {
		if len(k.missing(rows)) == 0 {
			out = append(out, k.Name)
		}
	}
	return out
}

func init() {
	registerPlot(PlotKind{Name: "delay_box", Doc: "response delay per protocol and swept values: boxes p25-p75 with the median, whiskers at p5 and p95 (study A)",
		Needs: []string{"delay_p5_ms", "delay_p25_ms", "delay_p50_ms", "delay_p75_ms", "delay_p95_ms"}, Draw: drawDelayBox})
	registerPlot(barKind("jitter_bars", "jitter_pct", "jitter (% of mean delay)", "Jitter",
		"Mean absolute difference between consecutive delays, as a percentage of the mean delay (RFC 4689, study A)."))
	registerPlot(barKind("bytes_bars", "bytes_per_request", "bytes on the wire per request", "Data volume per request",
		"All bytes the client sent (Ethernet frames: headers, handshakes, ACKs and control frames included) divided by the requests."))
	registerPlot(barKind("bytes_resp_bars", "bytes_per_response", "bytes on the wire per response", "Data volume per response",
		"All bytes delivered to the client (Ethernet frames: headers, handshakes, ACKs and control frames included) divided by the responses it received (study A's Fig. 5 has both directions)."))
	registerPlot(barKind("goodput_bars", "goodput_mbps", "goodput (Mbit/s)", "Goodput",
		"Payload bytes of every completed stream over the transfer time (mean over repetitions)."))
	registerPlot(PlotKind{Name: "conns_heatmap", Doc: "connections per 1000 requests by interval and payload, for each protocol that opened more than one connection in a cell (study A: HTTP/1.1)",
		Needs: []string{"conns_per_1000", "interval_ms", "req_size"}, Draw: drawConnsHeatmap})
	registerPlot(PlotKind{Name: "delay_cdf", Doc: "empirical distribution of the delay per protocol (first repetition); a log delay axis when the delays span more than a decade",
		Needs: []string{"records"}, Draw: func(p panel) ([]Figure, error) { return drawRecordLines(p, viewCDF) }})
	registerPlot(PlotKind{Name: "delay_ccdf", Doc: "the delay's tail: the fraction of requests slower than each delay per protocol, both axes logarithmic (first repetition)",
		Needs: []string{"records"}, Draw: func(p panel) ([]Figure, error) { return drawRecordLines(p, viewCCDF) }})
	registerPlot(PlotKind{Name: "timeseries", Doc: "delay over the time requests were sent: each time bin's median as a line and its slowest request as a dot (first repetition)",
		Needs: []string{"records"}, Draw: func(p panel) ([]Figure, error) { return drawRecordLines(p, viewOverTime) }})
}

// category returns the function that places a row on the x axis: its
// swept values, or its protocol when nothing is swept (then each protocol
// has its own labelled position instead of one unlabelled group).
func (p panel) category() (func(results.Summary) string, []string) {
	if p.axis == "" {
		return func(s results.Summary) string { return s.Protocol }, p.protos
	}
	return comboLabel, p.cats
}

// drawDelayBox draws the delay-box step's boxes: each stack's quantiles
// averaged over its repetitions (a category's rows share every swept
// value, by which the box is found).
func drawDelayBox(p panel) ([]Figure, error) {
	catOf, cats := p.category()
	stats := map[string]map[string]boxStat{}
	for _, row := range p.rows {
		if stats[row.Protocol] == nil {
			stats[row.Protocol] = map[string]boxStat{}
		}
		if b, ok := p.run.analysis.DelayBoxOf(row.Profile, comboLabel(row), row.Protocol); ok {
			stats[row.Protocol][catOf(row)] = boxStat{P5: b.P5, P25: b.P25, P50: b.P50, P75: b.P75, P95: b.P95}
		}
	}
	pl := groupedBoxes(cats, p.protos, stats, p.xLabel(), "response delay (ms)")
	fig, err := render(pl, p.dir, p.stem, "Response delay, "+p.profile, "Boxes from the 25th to the 75th percentile with the median; whiskers at the 5th and 95th percentiles (study A's box plots).", figW, figH)
	return []Figure{fig}, err
}

// barKind is a bar chart of one summary field per protocol and swept
// values, averaged over repetitions.
func barKind(name, field, ylabel, title, caption string) PlotKind {
	doc := fmt.Sprintf("%s (%s) per protocol and swept values", title, field)
	return PlotKind{Name: name, Doc: doc, Needs: []string{field}, Draw: func(p panel) ([]Figure, error) {
		catOf, cats := p.category()
		vals := p.meansOf(field, catOf)
		pl, err := groupedBars(cats, p.protos, vals, p.xLabel(), ylabel)
		if err != nil {
			return nil, err
		}
		fig, err := render(pl, p.dir, p.stem, title+", "+p.profile, caption, figW, figH)
		return []Figure{fig}, err
	}}
}

// meansOf is the analysis's mean of field over each stack's repetitions
// (the means step), per protocol and category: a category's rows share
// every swept value, by which the mean is found.
func (p panel) meansOf(field string, cat func(results.Summary) string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, r := range p.rows {
		if out[r.Protocol] == nil {
			out[r.Protocol] = map[string]float64{}
		}
		if m, ok := p.run.analysis.MeanOf(r.Profile, comboLabel(r), r.Protocol, field); ok {
			out[r.Protocol][cat(r)] = m
		}
	}
	return out
}

// drawConnsHeatmap plots connections per 1000 requests by interval
// (columns) and payload (rows), as study A does for HTTP/1.1, for every
// protocol that opened more than one connection in some cell: the
// conns-grid step's grids, over the rows swept at the figure's fixed
// values.
func drawConnsHeatmap(p panel) ([]Figure, error) {
	var figs []Figure
	for _, proto := range p.protos {
		cg, ok := p.run.analysis.ConnsGridOf(p.profile, analysis.FixedKey(p.fixed), proto)
		if !ok {
			continue
		}
		g := grid{cols: cg.Intervals, rows: cg.Payloads, values: cg.Means}
		var colNames, rowNames []string
		for _, iv := range cg.Intervals {
			colNames = append(colNames, strconv.FormatFloat(iv, 'f', -1, 64)+" ms")
		}
		for _, pl := range cg.Payloads {
			rowNames = append(rowNames, strconv.FormatFloat(pl, 'f', -1, 64)+" B")
		}
		pl, err := heatmap(g, "request interval", "payload", colNames, rowNames)
		if err != nil {
			return nil, err
		}
		fig, err := render(pl, p.dir, p.stem+"-"+proto, "Connections per 1000 requests, "+proto+", "+p.profile,
			"Transport connections the HTTP/1.1 client established per 1000 requests, by interval and payload (study A).", 6*vg.Inch, 4*vg.Inch)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	return figs, nil
}

// recordView is which view of a cell's records a record plot draws.
type recordView int

const (
	viewCDF recordView = iota
	viewCCDF
	viewOverTime
)

// drawRecordLines draws, per swept combination (at most six), one line per
// protocol from the records: the delay CDF, its tail, or the delay over
// time.
func drawRecordLines(p panel, view recordView) ([]Figure, error) {
	var figs []Figure
	for ci, cat := range p.cats {
		if ci >= 6 {
			break // enough to read; the records hold the rest
		}
		pts, peaks := map[string]plotter.XYs{}, map[string]plotter.XYs{}
		for _, row := range p.rows {
			if comboLabel(row) != cat || row.Rep > 1 {
				continue
			}
			if cs := p.run.cellSeriesOf(row); cs != nil {
				switch view {
				case viewCDF:
					pts[row.Protocol] = cs.cdf
				case viewCCDF:
					pts[row.Protocol] = cs.ccdf
				default:
					pts[row.Protocol], peaks[row.Protocol] = cs.series, cs.peaks
				}
			}
		}
		if len(pts) == 0 {
			continue
		}
		label := p.profile
		if cat != "" {
			label += ", " + p.axis + " " + cat
		}
		stem := fmt.Sprintf("%s-%d", p.stem, ci+1)
		fig, err := drawRecordView(view, p.protos, pts, peaks, label, p.dir, stem)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	return figs, nil
}

// drawRecordView draws one record plot of the protocols' points.
func drawRecordView(view recordView, protos []string, pts, peaks map[string]plotter.XYs, label, dir, stem string) (Figure, error) {
	pl, title, caption, err := recordPlot(view, protos, pts, peaks)
	if err != nil {
		return Figure{}, err
	}
	return render(pl, dir, stem, title+", "+label, caption, figW, figH)
}

// recordPlot is a record plot before it is rendered: the plot, its title
// (without the network) and its caption.
func recordPlot(view recordView, protos []string, pts, peaks map[string]plotter.XYs) (pl *plot.Plot, title, caption string, err error) {
	switch view {
	case viewCDF:
		logX := spansDecade(pts)
		if logX {
			pts = positiveX(pts)
		}
		if pl, err = lines(protos, pts, "response delay (ms)", "fraction of requests"); err != nil {
			return nil, "", "", err
		}
		// A distribution ends at 1; the legend goes where a CDF has
		// no data (bottom right).
		pl.Y.Min, pl.Y.Max = 0, 1
		pl.Legend.Top = false
		caption = "Empirical distribution of the response delay (first repetition)."
		if logX {
			logAxis(&pl.X)
			caption += " The delay axis is logarithmic: the delays span more than a decade, which a linear axis would crush against its left edge."
		}
		return pl, "Delay CDF", caption, nil
	case viewCCDF:
		if pl, err = lines(protos, positiveX(pts), "response delay (ms)", "fraction of requests slower"); err != nil {
			return nil, "", "", err
		}
		logAxis(&pl.X)
		logAxis(&pl.Y)
		return pl, "Delay tail (CCDF)", "The fraction of requests slower than each delay, both axes logarithmic: the tail a percentile summary hides (p99 is where a line crosses 0.01, p99.9 at 0.001). Each line stops at one request in the cell's count (first repetition).", nil
	default:
		if pl, err = lines(protos, pts, "time since the cell started (s)", "response delay (ms)"); err != nil {
			return nil, "", "", err
		}
		if err := addPeaks(pl, protos, peaks); err != nil {
			return nil, "", "", err
		}
		return pl, "Delay over time", fmt.Sprintf("Lines: the median response delay of the requests sent in each of %d time bins; dots: the slowest request of each bin, so that a spike shows (first repetition).", seriesBins), nil
	}
}

// spansDecade says whether the points' X values (delays) span more than
// a factor of ten, where a linear axis leaves the bulk of the curves as a
// sliver at its left edge (one 60 ms outlier beside 1-3 ms delays).
func spansDecade(pts map[string]plotter.XYs) bool {
	lo, hi := math.Inf(1), 0.0
	for _, xy := range pts {
		for _, p := range xy {
			if p.X > 0 {
				lo, hi = math.Min(lo, p.X), math.Max(hi, p.X)
			}
		}
	}
	return hi > 10*lo
}

// positiveX drops the points a log axis cannot place (a delay of 0).
func positiveX(pts map[string]plotter.XYs) map[string]plotter.XYs {
	out := make(map[string]plotter.XYs, len(pts))
	for name, xy := range pts {
		var keep plotter.XYs
		for _, p := range xy {
			if p.X > 0 && p.Y > 0 {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			out[name] = keep
		}
	}
	return out
}

// logAxis makes an axis logarithmic with ticks at powers of ten and the
// steps between (1, 2, 5), once the plot's data are added. A range a log
// axis cannot draw is mended first: one value (a single record) gets a
// decade around it, and an axis with nothing above 0 stays linear (the
// plotting library panics on a log scale reaching 0).
func logAxis(a *plot.Axis) {
	if !(a.Max > 0) {
		return
	}
	if !(a.Max > a.Min) || !(a.Min > 0) {
		v := a.Max
		a.Min, a.Max = v/math.Sqrt(10), v*math.Sqrt(10)
	}
	a.Scale = plot.LogScale{}
	a.Tick.Marker = ticks125{}
}

// ticks125 marks a log axis at 1, 2 and 5 times each power of ten,
// labelled, and at the other whole multiples unlabelled: a range within
// one decade (8 to 60 ms) still gets labels to read values by, where
// powers of ten alone would label one tick or none.
type ticks125 struct{}

func (ticks125) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi >= lo) {
		return nil
	}
	var out []plot.Tick
	for exp := math.Floor(math.Log10(lo)); exp <= math.Ceil(math.Log10(hi)); exp++ {
		decade := math.Pow(10, exp)
		for m := 1; m <= 9; m++ {
			v := float64(m) * decade
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			out = append(out, t)
		}
	}
	return out
}

// addPeaks draws each protocol's peaks as dots of its colour.
func addPeaks(pl *plot.Plot, protos []string, peaks map[string]plotter.XYs) error {
	for _, name := range protos {
		xy := peaks[name]
		if len(xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = colorOf(name)
		sc.GlyphStyle.Radius = vg.Points(1.6)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		pl.Add(sc)
	}
	return nil
}

func init() {
	registerPlot(PlotKind{Name: "rt_e2e_bars", Doc: "study B's table as a picture: response time and end-to-end delay per protocol (means after the 3-MAD rule, error bars ±1 standard deviation)",
		Needs: []string{"response_time_mean_ms", "response_time_std_ms", "e2e_mean_ms", "e2e_std_ms"}, Draw: drawRTE2EBars})
	registerPlot(PlotKind{Name: "e2e_hist", Doc: "histogram of the end-to-end delay per protocol (study B), from each cell's records",
		Needs: []string{"records"}, Draw: drawDelayHist})
}

// drawRTE2EBars draws two grouped bar charts, response time and
// end-to-end delay, each bar a mean with ±1 std error bars.
func drawRTE2EBars(p panel) ([]Figure, error) {
	var figs []Figure
	catOf, cats := p.category()
	for _, f := range []struct{ mean, std, title, stem string }{
		{"response_time_mean_ms", "response_time_std_ms", "Response time", "rt"},
		{"e2e_mean_ms", "e2e_std_ms", "End-to-end delay", "e2e"},
	} {
		means, stds := p.meansOf(f.mean, catOf), p.meansOf(f.std, catOf)
		pl, err := groupedBars(cats, p.protos, means, p.xLabel(), f.title+" (ms)")
		if err != nil {
			return nil, err
		}
		if err := addErrorBars(pl, cats, p.protos, means, stds); err != nil {
			return nil, err
		}
		fig, err := render(pl, p.dir, p.stem+"-"+f.stem, f.title+", "+p.profile,
			"Mean after removing values beyond 3 scaled MADs from the median, with ±1 standard deviation (study B's statistics); response time = starttransfer − namelookup, end-to-end = total − namelookup.", figW, figH)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	return figs, nil
}

// drawDelayHist draws, per swept combination (at most six), the
// distribution of each protocol's delay as a frequency polygon: the
// fraction of requests in each of 40 bins between the smallest 0.5th and
// the largest 99th percentile (the tails are in the CDF).
func drawDelayHist(p panel) ([]Figure, error) {
	var figs []Figure
	for ci, cat := range p.cats {
		if ci >= 6 {
			break
		}
		cdfs := map[string]plotter.XYs{}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, row := range p.rows {
			if comboLabel(row) != cat || row.Rep > 1 {
				continue
			}
			cs := p.run.cellSeriesOf(row)
			if cs == nil || len(cs.cdf) < 2 {
				continue
			}
			cdfs[row.Protocol] = cs.cdf
			lo, hi = math.Min(lo, cdfAt(cs.cdf, 0.005)), math.Max(hi, cdfAt(cs.cdf, 0.99))
		}
		if len(cdfs) == 0 || !(hi > lo) {
			continue
		}
		const bins = 40
		width := (hi - lo) / bins
		pts := map[string]plotter.XYs{}
		for proto, cdf := range cdfs {
			for b := 0; b < bins; b++ {
				x0, x1 := lo+float64(b)*width, lo+float64(b+1)*width
				pts[proto] = append(pts[proto], plotter.XY{X: (x0 + x1) / 2, Y: fractionBelow(cdf, x1) - fractionBelow(cdf, x0)})
			}
		}
		pl, err := lines(p.protos, pts, "end-to-end delay (ms)", "fraction of requests per bin")
		if err != nil {
			return nil, err
		}
		label := p.profile
		if cat != "" {
			label += ", " + p.axis + " " + cat
		}
		fig, err := render(pl, p.dir, fmt.Sprintf("%s-%d", p.stem, ci+1), "End-to-end delay histogram, "+label,
			fmt.Sprintf("Fraction of requests in each of %d bins of %.2f ms (first repetition); the tails beyond the 0.5th and 99th percentiles are in the CDF.", bins, width), figW, figH)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	return figs, nil
}

// cdfAt returns the q-quantile from a CDF given as (value, fraction) points.
func cdfAt(cdf plotter.XYs, q float64) float64 {
	for i := 1; i < len(cdf); i++ {
		if cdf[i].Y >= q {
			return cdf[i-1].X + (cdf[i].X-cdf[i-1].X)*(q-cdf[i-1].Y)/math.Max(cdf[i].Y-cdf[i-1].Y, 1e-12)
		}
	}
	return cdf[len(cdf)-1].X
}

// fractionBelow returns the fraction of values at or below x, interpolated
// in the CDF.
func fractionBelow(cdf plotter.XYs, x float64) float64 {
	if x < cdf[0].X {
		return 0
	}
	for i := 1; i < len(cdf); i++ {
		if cdf[i].X >= x {
			if cdf[i].X == cdf[i-1].X {
				return cdf[i].Y
			}
			return cdf[i-1].Y + (cdf[i].Y-cdf[i-1].Y)*(x-cdf[i-1].X)/(cdf[i].X-cdf[i-1].X)
		}
	}
	return 1
}

func init() {
	registerPlot(bySizeKind("pkt_rtt_by_size", "pkt_rtt_mean_ms", "packet round trip, mean (ms)", "Packet round trip by frame size",
		"Study E's RTT, packet level as its probes saw it: the mean client-to-server packet delay plus the mean server-to-client one (pkt_rtt_mean_ms), by frame size; one line per protocol. The frame round trip below is tlab's per-frame figure."))
	registerPlot(bySizeKind("rtt_by_size", "frame_rtt_p50_ms", "frame round trip, median (ms)", "Frame round trip by frame size",
		"Median time from a frame's first byte sent to its result received (tlab's per-frame figure; study E's RTT is packet level, the figure above), by frame size; one line per protocol."))
	registerPlot(bySizeKind("jitter_by_size", "pkt_owd_std_ms", "packet delay spread, SD (ms)", "Jitter by frame size",
		"Study E's jitter as tlab reads it: the spread (standard deviation) of the client-to-server packet delay over the whole run, every packet the link delivered and every transport alike (pkt_owd_std_ms), the statistic the study's network profiles were calibrated to; by frame size. The study cites Ferrari (1992) and does not say which statistic its probe reports; pkt_jitter_ms, the mean step between consecutive packets, is in the summary."))
	registerPlot(bySizeKind("pkt_owd_by_size", "pkt_owd_p50_ms", "packet one-way delay, median (ms)", "Packet one-way delay by frame size",
		"Median client-to-server one-way delay of every packet, as a passive probe on both ends (study E's Qosium) sees it, by frame size; the frame round trip above is tlab's per-frame figure."))
	registerPlot(bySizeKind("throughput_by_size", "throughput_mbps", "throughput (Mbit/s)", "Client-to-server throughput by frame size",
		"Bytes the link delivered towards the server per second over the measured window, by frame size."))
}

// bySizeKind draws a summary field against the frame size, one line per
// protocol (study E's figures), per network, averaging repetitions.
func bySizeKind(name, field, ylabel, title, caption string) PlotKind {
	return PlotKind{Name: name, Doc: title + " (" + field + ") per network", Needs: []string{field, "frame_bytes"},
		Draw: func(p panel) ([]Figure, error) {
			pts := map[string]plotter.XYs{}
			var beyond []string
			for _, proto := range p.protos {
				sum, n := map[float64]float64{}, map[float64]float64{}
				for _, r := range p.rows {
					v, x := r.Float(field), r.Float("frame_bytes")/1000
					if r.Protocol != proto || math.IsNaN(v) || math.IsNaN(x) {
						continue
					}
					if math.IsInf(v, 0) {
						// A percentile among frames that never came
						// back: no point can show it.
						beyond = append(beyond, fmt.Sprintf("%s at %g kB", proto, x))
						continue
					}
					sum[x] += v
					n[x]++
				}
				var xs []float64
				for x := range sum {
					xs = append(xs, x)
				}
				slices.Sort(xs)
				for _, x := range xs {
					pts[proto] = append(pts[proto], plotter.XY{X: x, Y: sum[x] / n[x]})
				}
			}
			pl, err := lines(p.protos, pts, "frame size (kB)", ylabel)
			if err != nil {
				return nil, err
			}
			// Values grow with the size: the legend goes top left, away
			// from the largest frames' points.
			pl.Legend.Left = true
			// Marks at the measured sizes: a protocol measured at one
			// size only (or lost at the others) is still seen.
			for _, proto := range p.protos {
				if len(pts[proto]) == 0 {
					continue
				}
				sc, err := plotter.NewScatter(pts[proto])
				if err != nil {
					return nil, err
				}
				sc.GlyphStyle.Color = colorOf(proto)
				sc.GlyphStyle.Radius = vg.Points(3)
				pl.Add(sc)
			}
			says := caption
			if len(beyond) > 0 {
				says += " Beyond any bound (more frames lost than the percentile allows), so not drawn: " + strings.Join(beyond, ", ") + "."
			}
			fig, err := render(pl, p.dir, p.stem, title+", "+p.profile, says, figW, figH)
			return []Figure{fig}, err
		}}
}
