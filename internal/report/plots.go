package report

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"tlab/internal/results"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is one plot, rendered as SVG (inlined in the HTML) and saved as
// SVG and PNG files.
type Figure struct {
	Name    string // file stem
	Title   string
	Caption string
	SVG     []byte
	// Kind is the plot kind as the scenario asked for it (with its fixed
	// values): the page sets a kind's figures, one per network, side by
	// side as small multiples.
	Kind string
}

// smallMultiples groups consecutive figures of one kind, so that a page
// lays out each kind's networks side by side (a grid) rather than one
// full-width figure under another: eight cells' figures took a page of
// about 10 800 px.
func smallMultiples(figs []Figure) [][]Figure {
	var out [][]Figure
	for i, f := range figs {
		if i > 0 && f.Kind == figs[i-1].Kind {
			out[len(out)-1] = append(out[len(out)-1], f)
			continue
		}
		out = append(out, []Figure{f})
	}
	return out
}

// protocolColors gives every protocol the same colour in every plot; a
// test fails when a registered protocol has none or two share one.
var protocolColors = map[string]color.RGBA{
	"tcp":          {0x1f, 0x77, 0xb4, 0xff},
	"tls":          {0x17, 0xbe, 0xcf, 0xff},
	"quic":         {0xff, 0x7f, 0x0e, 0xff},
	"quic-streams": {0xbc, 0xbd, 0x22, 0xff},
	"h1":           {0x8c, 0x56, 0x4b, 0xff},
	"h1s":          {0xd6, 0x27, 0x28, 0xff},
	"h2":           {0x94, 0x67, 0xbd, 0xff},
	"h2c":          {0xc5, 0xb0, 0xd5, 0xff},
	"h3":           {0x2c, 0xa0, 0x2c, 0xff},
	// Stacks through a handover: MPTCP, and tcp and quic that redial.
	"mptcp":        {0x00, 0x80, 0x80, 0xff},
	"tcp-redial":   {0x6b, 0xae, 0xd6, 0xff},
	"quic-redial":  {0xfd, 0xae, 0x6b, 0xff},
	"quic-migrate": {0xe6, 0x55, 0x0d, 0xff},
	// Study E's frame transports (tcp and quic-streams as above).
	"udp":        {0xe3, 0x77, 0xc2, 0xff},
	"rtp":        {0x63, 0x79, 0x39, 0xff},
	"mpegts":     {0x39, 0x3b, 0x79, 0xff},
	"quic-dgram": {0xa6, 0x56, 0x28, 0xff},
	// Study E's two 5G locations (Table 2's series): main dark, degraded light.
	"5g-cband":    {0x1f, 0x4e, 0x79, 0xff},
	"5g-degraded": {0x9e, 0xc5, 0xe8, 0xff},
	// Study D's MQTT stacks.
	"mqtt-tcp":  {0x1f, 0x4e, 0x79, 0xff},
	"mqtt-tls":  {0x8e, 0x1b, 0x5c, 0xff},
	"mqtt-quic": {0xe6, 0xab, 0x02, 0xff},
	// Study C's allowances.
	"static":          {0x7f, 0x7f, 0x7f, 0xff},
	"improved-static": {0x1f, 0x77, 0xb4, 0xff},
	"autotuning":      {0xff, 0x7f, 0x0e, 0xff},
	"fast-autotuning": {0xd6, 0x27, 0x28, 0xff},
	// quic-go's own settings, simulated and measured.
	"quic-go static":     {0x2c, 0xa0, 0x2c, 0xff},
	"quic-go autotuning": {0x94, 0x67, 0xbd, 0xff},
}

// Suffixes that tell a simulated line from a measured one of the same
// setting: both get the setting's colour, the simulated one dashed.
const (
	simSuffix      = " (sim)"
	measuredSuffix = " (measured)"
)

// colorOf is name's colour: its own where it has one, otherwise one picked
// by a hash of the name, so that a name keeps its colour in every plot of
// every report whatever else is drawn beside it.
func colorOf(name string) color.RGBA {
	if c, ok := protocolColors[name]; ok {
		return c
	}
	fallback := []color.RGBA{{0x7f, 0x7f, 0x7f, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x33, 0x33, 0x33, 0xff}, {0x99, 0x66, 0x00, 0xff}}
	h := fnv.New32a()
	h.Write([]byte(name))
	return fallback[h.Sum32()%uint32(len(fallback))]
}

// render writes a plot as SVG and PNG into dir and returns the figure.
func render(p *plot.Plot, dir, name, title, caption string, w, h vg.Length) (Figure, error) {
	p.Title.Text = title
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return Figure{}, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return Figure{}, err
	}
	if dir == "" { // in memory only: the live view writes nothing
		return Figure{Name: name, Title: title, Caption: caption, SVG: buf.Bytes()}, nil
	}
	// Both drawings are made in memory and written as every results file
	// is (results.WriteAtomic): a plots/NAME.png planted as a link is
	// replaced, not written through.
	pt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return Figure{}, err
	}
	var png bytes.Buffer
	if _, err := pt.WriteTo(&png); err != nil {
		return Figure{}, fmt.Errorf("%s.png: %w", name, err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, name+".svg"), buf.Bytes()); err != nil {
		return Figure{}, err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, name+".png"), png.Bytes()); err != nil {
		return Figure{}, err
	}
	return Figure{Name: name, Title: title, Caption: caption, SVG: buf.Bytes()}, nil
}

// renderStacked writes plots one above the other in one figure, their
// axes aligned, as flent's and crusader's latency-under-load views set
// the load above the latency on one time axis (two units never share one
// y axis). The first plot carries the title.
func renderStacked(plots []*plot.Plot, dir, name, title, caption string, w, h vg.Length) (Figure, error) {
	plots[0].Title.Text = title
	drawOn := func(c draw.Canvas) {
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Points(4), PadX: vg.Points(2), PadTop: vg.Points(2), PadBottom: vg.Points(2), PadLeft: vg.Points(2), PadRight: vg.Points(2)}
		cols := make([][]*plot.Plot, len(plots))
		for i, p := range plots {
			cols[i] = []*plot.Plot{p}
		}
		for i, row := range plot.Align(cols, tiles, c) {
			plots[i].Draw(row[0])
		}
	}
	svg := vgsvg.New(w, h)
	drawOn(draw.New(svg))
	var buf bytes.Buffer
	if _, err := svg.WriteTo(&buf); err != nil {
		return Figure{}, err
	}
	fig := Figure{Name: name, Title: title, Caption: caption, SVG: buf.Bytes()}
	if dir == "" {
		return fig, nil
	}
	img := vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	drawOn(draw.New(img))
	var png bytes.Buffer
	if _, err := img.WriteTo(&png); err != nil {
		return Figure{}, fmt.Errorf("%s.png: %w", name, err)
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, name+".svg"), buf.Bytes()); err != nil {
		return Figure{}, err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, name+".png"), png.Bytes()); err != nil {
		return Figure{}, err
	}
	return fig, nil
}

// boxStat is one box: whiskers at p5 and p95, box from p25 to p75, median.
type boxStat struct {
	X                      float64
	P5, P25, P50, P75, P95 float64
}

// whole tells whether every quantile of the box is a number: a box with a
// missing one is left out (a NaN in the data range made the axis loop).
func (s boxStat) whole() bool {
	for _, v := range []float64{s.P5, s.P25, s.P50, s.P75, s.P95} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// quantileBoxes draws box plots from given quantiles (the studies' box
// plots have whiskers at the 5th and 95th percentiles, not gonum's
// 1.5 IQR).
type quantileBoxes struct {
	Boxes []boxStat
	Width vg.Length
	Color color.Color
}

func (b *quantileBoxes) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	line := draw.LineStyle{Color: color.Black, Width: vg.Points(0.6)}
	for _, s := range b.Boxes {
		if !s.whole() {
			continue
		}
		x := trX(s.X)
		half := b.Width / 2
		y5, y25, y50, y75, y95 := trY(s.P5), trY(s.P25), trY(s.P50), trY(s.P75), trY(s.P95)
		c.FillPolygon(b.Color, c.ClipPolygonY([]vg.Point{{X: x - half, Y: y25}, {X: x + half, Y: y25}, {X: x + half, Y: y75}, {X: x - half, Y: y75}}))
		c.StrokeLines(line, c.ClipLinesY([]vg.Point{{X: x - half, Y: y25}, {X: x + half, Y: y25}, {X: x + half, Y: y75}, {X: x - half, Y: y75}, {X: x - half, Y: y25}})...)
		c.StrokeLines(draw.LineStyle{Color: color.Black, Width: vg.Points(1.4)}, c.ClipLinesY([]vg.Point{{X: x - half, Y: y50}, {X: x + half, Y: y50}})...)
		c.StrokeLines(line, c.ClipLinesY([]vg.Point{{X: x, Y: y75}, {X: x, Y: y95}}, []vg.Point{{X: x, Y: y25}, {X: x, Y: y5}},
			[]vg.Point{{X: x - half/2, Y: y95}, {X: x + half/2, Y: y95}}, []vg.Point{{X: x - half/2, Y: y5}, {X: x + half/2, Y: y5}})...)
	}
}

func (b *quantileBoxes) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range b.Boxes {
		if !s.whole() {
			continue
		}
		xmin, xmax = math.Min(xmin, s.X-0.5), math.Max(xmax, s.X+0.5)
		ymin, ymax = math.Min(ymin, s.P5), math.Max(ymax, s.P95)
	}
	return
}

func (b *quantileBoxes) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.Color, c.ClipPolygonY(pts))
}

// legendRoom raises the top of the y axis so that the legend, drawn in the
// top right corner, does not cover data.
func legendRoom(p *plot.Plot) {
	if p.Y.Max > p.Y.Min {
		p.Y.Max += 0.22 * (p.Y.Max - p.Y.Min)
	}
}

// newPlot makes a plot with tlab's common style.
func newPlot(xLabel, yLabel string) *plot.Plot {
	return newPlotGrid(xLabel, yLabel, true)
}

// newPlotGrid makes a plot whose grid has vertical lines only when the x
// axis is a scale: on a category axis they would run through the middle
// of each category's group of boxes or bars.
func newPlotGrid(xLabel, yLabel string, vertical bool) *plot.Plot {
	p := plot.New()
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.Legend.Top = true
	p.Legend.Left = false
	g := plotter.NewGrid()
	if !vertical {
		g.Vertical.Color = nil
	}
	p.Add(g)
	return p
}

// groupedBoxes draws one box per (category, series) with whiskers at p5
// and p95; stats[series][category].
func groupedBoxes(categories, series []string, stats map[string]map[string]boxStat, xLabel, yLabel string) *plot.Plot {
	p := newPlotGrid(xLabel, yLabel, false)
	slots := layoutSlots(categories, series, 4, 18)
	for si, s := range series {
		var boxes []boxStat
		for ci, c := range categories {
			st, ok := stats[s][c]
			if !ok {
				continue
			}
			st.X = float64(ci)
			if !slots.own {
				st.X += slots.shift(si) * 0.8 / slots.n
			}
			boxes = append(boxes, st)
		}
		b := &quantileBoxes{Boxes: boxes, Width: slots.width, Color: colorOf(s)}
		p.Add(b)
		if !slots.own {
			p.Legend.Add(s, b)
		}
	}
	p.NominalX(categories...)
	p.X.Min, p.X.Max = -0.6, float64(len(categories))-0.4
	legendRoom(p)
	return p
}

// slotLayout places the series side by side within each category.
type slotLayout struct {
	n     float64   // slots per category
	own   bool      // one series per category (the categories are the series): no side-by-side, no legend
	width vg.Length // one slot's width on the canvas
}

// layoutSlots sizes the slots to share about 420 points among all of them,
// within [minWidth, maxWidth].
func layoutSlots(categories, series []string, minWidth, maxWidth float64) slotLayout {
	l := slotLayout{n: float64(len(series)), own: slices.Equal(categories, series)}
	if l.own {
		l.n = 1
	}
	l.width = vg.Length(math.Max(minWidth, math.Min(maxWidth, 420/(l.n*float64(len(categories))))))
	return l
}

// shift is series si's position within its category, in slots from the
// category's centre.
func (l slotLayout) shift(si int) float64 { return float64(si) - (l.n-1)/2 }

// offset is series si's shift on the canvas.
func (l slotLayout) offset(si int) vg.Length { return vg.Length(l.shift(si)) * l.width }

// groupedBars draws one bar per (category, series); values[series][category].
func groupedBars(categories, series []string, values map[string]map[string]float64, xLabel, yLabel string) (*plot.Plot, error) {
	p := newPlotGrid(xLabel, yLabel, false)
	slots := layoutSlots(categories, series, 3, 20)
	for si, s := range series {
		vals := make(plotter.Values, len(categories))
		for ci, c := range categories {
			v, ok := values[s][c]
			if !ok || math.IsNaN(v) {
				v = 0
			}
			vals[ci] = v
		}
		bars, err := plotter.NewBarChart(vals, slots.width)
		if err != nil {
			return nil, err
		}
		bars.Color = colorOf(s)
		bars.LineStyle.Width = 0
		if !slots.own {
			bars.Offset = slots.offset(si)
			p.Legend.Add(s, bars)
		}
		p.Add(bars)
	}
	p.NominalX(categories...)
	// Room beside the outer categories, so their bars are not cut by the
	// plot's edge.
	p.X.Min, p.X.Max = -0.6, float64(len(categories))-0.4
	legendRoom(p)
	return p, nil
}

// lines draws one line per series from x,y points.
func lines(series []string, pts map[string]plotter.XYs, xLabel, yLabel string) (*plot.Plot, error) {
	p := newPlot(xLabel, yLabel)
	for _, s := range series {
		xy := pts[s]
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, err
		}
		base := strings.TrimSuffix(strings.TrimSuffix(s, simSuffix), measuredSuffix)
		l.LineStyle.Color = colorOf(base)
		l.LineStyle.Width = vg.Points(1.3)
		if strings.HasSuffix(s, simSuffix) {
			l.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(s, l)
	}
	legendRoom(p)
	return p, nil
}

// grid is a heat map's data: values[row][col], with labels.
type grid struct {
	cols, rows []float64
	values     [][]float64
}

func (g grid) Dims() (c, r int)   { return len(g.cols), len(g.rows) }
func (g grid) Z(c, r int) float64 { return g.values[r][c] }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }

// heatmap draws values by column and row, each cell labelled with its value.
func heatmap(g grid, xLabel, yLabel string, colNames, rowNames []string) (*plot.Plot, error) {
	p := newPlot(xLabel, yLabel)
	pal := moreland.SmoothBlueRed()
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range g.values {
		for _, v := range r {
			if !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	if hi == lo {
		hi = lo + 1
	}
	pal.SetMin(lo)
	pal.SetMax(hi)
	h := plotter.NewHeatMap(g, pal.Palette(64))
	h.Min, h.Max = lo, hi
	p.Add(h)
	var xys plotter.XYs
	var labels []string
	for r := range g.rows {
		for c := range g.cols {
			xys = append(xys, plotter.XY{X: float64(c), Y: float64(r)})
			labels = append(labels, fmt.Sprintf("%.1f", g.values[r][c]))
		}
	}
	lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lab.TextStyle {
		lab.TextStyle[i].XAlign = draw.XCenter
		lab.TextStyle[i].YAlign = draw.YCenter
	}
	p.Add(lab)
	p.NominalX(colNames...)
	p.NominalY(rowNames...)
	p.Legend = plot.NewLegend()
	return p, nil
}

// addErrorBars draws ±err bars on the bars groupedBars drew for the same
// categories and series, offset on the canvas exactly as the bars are.
func addErrorBars(p *plot.Plot, categories, series []string, values, errs map[string]map[string]float64) error {
	slots := layoutSlots(categories, series, 3, 20) // as groupedBars
	for si, s := range series {
		eb := &errorBars{}
		if !slots.own {
			eb.offset = slots.offset(si)
		}
		for ci, c := range categories {
			v, ok := values[s][c]
			e := errs[s][c]
			if !ok || math.IsNaN(v) || math.IsNaN(e) {
				continue
			}
			eb.x, eb.y, eb.err = append(eb.x, float64(ci)), append(eb.y, v), append(eb.err, e)
		}
		if len(eb.x) > 0 {
			p.Add(eb)
		}
	}
	return nil
}

// errorBars draws vertical ±err bars at category positions, shifted by a
// canvas offset (as bar charts shift their series).
type errorBars struct {
	x, y, err []float64
	offset    vg.Length
}

func (e *errorBars) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	line := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	for i := range e.x {
		x := trX(e.x[i]) + e.offset
		lo, hi := trY(e.y[i]-e.err[i]), trY(e.y[i]+e.err[i])
		c.StrokeLines(line, []vg.Point{{X: x, Y: lo}, {X: x, Y: hi}},
			[]vg.Point{{X: x - 3, Y: lo}, {X: x + 3, Y: lo}}, []vg.Point{{X: x - 3, Y: hi}, {X: x + 3, Y: hi}})
	}
}

func (e *errorBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 0, math.Inf(-1)
	for i := range e.x {
		xmin, xmax = math.Min(xmin, e.x[i]), math.Max(xmax, e.x[i])
		ymin, ymax = math.Min(ymin, e.y[i]-e.err[i]), math.Max(ymax, e.y[i]+e.err[i])
	}
	return
}
