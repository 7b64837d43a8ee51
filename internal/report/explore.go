package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"tlab/internal/explore"
)

// An exploration's map (tlab explore) is drawn from the tidy files it
// wrote beside the cells (explore.json, explore-verdicts.csv,
// explore-boundaries.csv), so that the report reads what a user reads.
func init() {
	registerPlot(PlotKind{Name: "explore_map", Doc: "an exploration's map (tlab explore): each measured point coloured by its verdict, the boundaries with their intervals; a verdict strip per comparison over one parameter, a decision map over two",
		Draw: drawExploreMap})
}

type exploreFacts struct {
	Parameters []struct {
		Path string  `json:"path"`
		Low  float64 `json:"low"`
		High float64 `json:"high"`
		Log  bool    `json:"log"`
	} `json:"parameters"`
	Comparisons []struct {
		Kind string `json:"kind"`
	} `json:"comparisons"`
	// Why is each boundary's attribution by ablation, in words.
	Why []string `json:"why"`
}

// readTable reads a CSV file into rows by column name.
func readTable(file string) ([]map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil || len(all) == 0 {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []map[string]string
	for _, rec := range all[1:] {
		row := map[string]string{}
		for i, h := range all[0] {
			if i < len(rec) {
				row[h] = rec[i]
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// verdictColor: a stack's own colour where a pair's verdict names it,
// green and red for a requirement met or failed, grey when undecided.
func verdictColor(label string) color.Color {
	switch label {
	case "meets":
		return color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
	case "fails":
		return color.RGBA{0xd6, 0x27, 0x28, 0xff}
	case "undecided":
		return color.RGBA{0xbb, 0xbb, 0xbb, 0xff}
	}
	return colorOf(label)
}

func drawExploreMap(p panel) ([]Figure, error) {
	dir := p.run.Dir
	b, err := os.ReadFile(filepath.Join(dir, "explore.json"))
	if os.IsNotExist(err) {
		return nil, nil // not an exploration
	}
	if err != nil {
		return nil, err
	}
	var facts exploreFacts
	if err := json.Unmarshal(b, &facts); err != nil {
		return nil, fmt.Errorf("explore.json: %w", err)
	}
	verdicts, err := readTable(filepath.Join(dir, "explore-verdicts.csv"))
	if err != nil {
		return nil, err
	}
	bounds, err := readTable(filepath.Join(dir, "explore-boundaries.csv"))
	if err != nil {
		return nil, err
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0
		}
		return v
	}
	var comps []string
	for _, v := range verdicts {
		if !containsString(comps, v["comparison"]) {
			comps = append(comps, v["comparison"])
		}
	}
	if len(facts.Parameters) == 0 || len(comps) == 0 {
		return nil, nil
	}
	x := facts.Parameters[0]
	pl := plot.New()
	pl.X.Label.Text = x.Path
	if x.Log {
		pl.X.Scale, pl.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	}
	legend := map[string]bool{}
	addPoints := func(pts plotter.XYs, label string) error {
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: verdictColor(label), Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		pl.Add(sc)
		if !legend[label] {
			legend[label] = true
			pl.Legend.Add(label, sc)
		}
		return nil
	}
	var title, caption string
	if len(facts.Parameters) == 1 {
		// The strip: one row per comparison.
		title = "Where the verdicts change, " + p.profile
		caption = "Each row is one comparison, each dot a measured point coloured by its verdict (a stack's colour: it is better; green: meets; red: fails; grey: undecided). A bar is a boundary's interval, its tick the estimate."
		byLabel := map[string]plotter.XYs{}
		var labels []string
		for _, v := range verdicts {
			row := float64(indexOf(comps, v["comparison"]))
			if _, ok := byLabel[v["label"]]; !ok {
				labels = append(labels, v["label"])
			}
			byLabel[v["label"]] = append(byLabel[v["label"]], plotter.XY{X: num(v[x.Path]), Y: row})
		}
		for _, l := range labels {
			if err := addPoints(byLabel[l], l); err != nil {
				return nil, err
			}
		}
		// Statuses inferred along the monotone axes (explore-points.csv's
		// how), not measured: rings on their stack's requirement rows.
		points, err := readTable(filepath.Join(dir, "explore-points.csv"))
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		inferred := map[string]plotter.XYs{}
		n := 0
		for _, pt := range points {
			if pt["how"] != "inferred" {
				continue
			}
			for i, c := range comps {
				if strings.HasPrefix(c, pt["stack"]+": ") {
					inferred[pt["status"]] = append(inferred[pt["status"]], plotter.XY{X: num(pt[x.Path]), Y: float64(i)})
					n++
				}
			}
		}
		for _, l := range []string{"meets", "fails"} {
			if len(inferred[l]) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(inferred[l])
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: verdictColor(l), Radius: vg.Points(3), Shape: draw.RingGlyph{}}
			pl.Add(sc)
			pl.Legend.Add(l+", inferred", sc)
		}
		if n > 0 {
			caption += fmt.Sprintf(" Rings: %d statuses inferred along the monotone axes from a measured point (a failure carries to every worse point, a success to every better one), not measured.", n)
		}
		// Statuses the point's floor decides by construction (how =
		// floor): squares on their stack's requirement rows.
		byFloor := map[string]plotter.XYs{}
		nFloor := 0
		for _, pt := range points {
			if pt["how"] != explore.HowFloor {
				continue
			}
			for i, c := range comps {
				if strings.HasPrefix(c, pt["stack"]+": ") {
					byFloor[pt["status"]] = append(byFloor[pt["status"]], plotter.XY{X: num(pt[x.Path]), Y: float64(i)})
					nFloor++
				}
			}
		}
		for _, l := range []string{"meets", "fails"} {
			if len(byFloor[l]) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(byFloor[l])
			if err != nil {
				return nil, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: verdictColor(l), Radius: vg.Points(4), Shape: draw.BoxGlyph{}}
			pl.Add(sc)
			pl.Legend.Add(l+", by floor", sc)
		}
		if nFloor > 0 {
			caption += fmt.Sprintf(" Squares: %d statuses decided by construction, by the floor the point's links prove for the metric (explore-points.csv: floor), with no repetition.", nFloor)
		}
		for _, bd := range bounds {
			row := float64(indexOf(comps, bd["comparison"]))
			if err := addInterval(pl, num(bd["low"]), num(bd["estimate"]), num(bd["high"]), row, true); err != nil {
				return nil, err
			}
		}
		pl.Y.Min, pl.Y.Max = -0.5, float64(len(comps))-0.5
		var ticks []plot.Tick
		for i, c := range comps {
			ticks = append(ticks, plot.Tick{Value: float64(i), Label: c})
		}
		pl.Y.Tick.Marker = plot.ConstantTicks(ticks)
	} else {
		// The map of the first pair (or the first comparison): dots by
		// verdict, boundaries as intervals along their axis.
		y := facts.Parameters[1]
		pl.Y.Label.Text = y.Path
		if y.Log {
			pl.Y.Scale, pl.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
		}
		pick := comps[0]
		for _, v := range verdicts {
			if v["kind"] == "pair" {
				pick = v["comparison"]
				break
			}
		}
		title = "Decision map: " + pick + ", " + p.profile
		caption = "Each dot a measured point coloured by its verdict (a stack's colour: it is better; grey: undecided); a bar is a boundary's interval along its parameter, its tick the estimate."
		byLabel := map[string]plotter.XYs{}
		var labels []string
		for _, v := range verdicts {
			if v["comparison"] != pick {
				continue
			}
			if _, ok := byLabel[v["label"]]; !ok {
				labels = append(labels, v["label"])
			}
			byLabel[v["label"]] = append(byLabel[v["label"]], plotter.XY{X: num(v[x.Path]), Y: num(v[y.Path])})
		}
		for _, l := range labels {
			if err := addPoints(byLabel[l], l); err != nil {
				return nil, err
			}
		}
		for _, bd := range bounds {
			if bd["comparison"] != pick {
				continue
			}
			along := bd["parameter"] == x.Path
			if err := addInterval(pl, num(bd["low"]), num(bd["estimate"]), num(bd["high"]), num(bd["at"]), along); err != nil {
				return nil, err
			}
		}
	}
	if len(facts.Why) > 0 {
		caption += " Why (each boundary's neighbours measured again with one impairment removed; explore-why.csv, the runs in ablation/): " + strings.Join(facts.Why, ". ") + "."
	}
	pl.Legend.Top = true
	fig, err := render(pl, p.dir, p.stem, title, caption, figW, figH)
	return []Figure{fig}, err
}

// addInterval draws a boundary's interval from low to high at a fixed
// coordinate (horizontal when along x), with a tick at the estimate.
func addInterval(pl *plot.Plot, low, est, high, at float64, alongX bool) error {
	pt := func(v float64) plotter.XY {
		if alongX {
			return plotter.XY{X: v, Y: at}
		}
		return plotter.XY{X: at, Y: v}
	}
	l, err := plotter.NewLine(plotter.XYs{pt(low), pt(high)})
	if err != nil {
		return err
	}
	l.LineStyle.Width = vg.Points(3)
	l.LineStyle.Color = color.RGBA{0, 0, 0, 0x90}
	sc, err := plotter.NewScatter(plotter.XYs{pt(est)})
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(5), Shape: draw.PlusGlyph{}}
	pl.Add(l, sc)
	return nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func containsString(list []string, s string) bool { return indexOf(list, s) >= 0 }
