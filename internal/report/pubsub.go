package report

import (
	"math"
	"slices"
	"strings"

	"tlab/internal/analysis"
	"tlab/internal/results"
)

// Study D's figures: Δ as box plots over repetitions, ξ with its interval,
// Δ+ by network.
func init() {
	registerPlot(PlotKind{Name: "completion_box", Doc: "Δ (pubsub completion time) over repetitions per protocol, by the swept values (loss rate; stations and retries): boxes Q1-Q3 with the median, whiskers at 1.5 IQR (study D)",
		Needs: []string{"completion_ms"}, Draw: drawCompletionBox})
	registerPlot(PlotKind{Name: "xi", Doc: "ξ = mean Δ of a protocol over mean Δ of mqtt-tcp (or the first protocol), by the swept values, with 95 % bootstrap intervals (study D)",
		Needs: []string{"completion_ms"}, Draw: drawXi})
	registerPlot(PlotKind{Name: "xi_box", Doc: "ξ per repetition, the study's view: each repetition's Δ over the baseline's mean Δ over the repetitions (so the spread is the protocol's alone), boxes Q1-Q3 with whiskers at 1.5 IQR, by the swept values (study D)",
		Needs: []string{"completion_ms"}, Draw: drawXiBox})
	registerPlot(PlotKind{Name: "reconnect_box", Doc: "Δ+ per repetition, the study's view: the first reconnection's Δ+ (the cell's second connection) over repetitions, boxes Q1-Q3 with whiskers at 1.5 IQR, by the swept values (study D)",
		Needs: []string{"reconnect_first_ms"}, Draw: drawReconnectBox})
	registerPlot(PlotKind{Name: "reconnect_by_network", Doc: "Δ+ (a new connection's set-up to the subscriber's receipt) per protocol and network, mean over repetitions with 95 % Student t intervals (study D)",
		Needs: []string{"reconnect_ms"}, Draw: drawReconnect})
}

// definedFor narrows a panel to the rows where field is a number, and
// places them on the x axis by the swept values that vary among those rows
// only (a pattern swept beside the loss rate is constant among the rows
// that have Δ, and would only lengthen the labels).
func (p panel) definedFor(field string) (panel, func(results.Summary) string) {
	var rows []results.Summary
	for _, r := range p.rows {
		if !math.IsNaN(r.Float(field)) {
			rows = append(rows, r)
		}
	}
	var keys []string
	if len(rows) > 0 {
		for i, prm := range rows[0].Params {
			for _, r := range rows[1:] {
				if i < len(r.Params) && r.Params[i].Value != prm.Value {
					keys = append(keys, prm.Key)
					break
				}
			}
		}
	}
	label := func(r results.Summary) string {
		var vals []string
		for _, k := range keys {
			vals = append(vals, r.Param(k))
		}
		if len(vals) == 0 {
			return r.Protocol
		}
		return strings.Join(vals, " / ")
	}
	q := p
	q.rows = rows
	q.protos = ordered(rows, func(s results.Summary) string { return s.Protocol })
	q.cats = ordered(rows, label)
	var short []string
	for _, k := range keys {
		short = append(short, k[strings.LastIndex(k, ".")+1:])
	}
	q.axis = strings.Join(short, " / ")
	return q, label
}

// boxOf is the analysis's box of field for a row's stack on its network
// and swept values (a ratio's over ref; ref empty otherwise), as the plot
// draws it.
func (p panel) boxOf(r results.Summary, field, ref string) (boxStat, bool) {
	b, ok := p.run.analysis.BoxOf(p.profile, comboLabel(r), field, ref, r.Protocol)
	return boxStat{P5: b.WhiskerLow, P25: b.Q1, P50: b.Median, P75: b.Q3, P95: b.WhiskerHigh}, ok
}

func drawCompletionBox(p panel) ([]Figure, error) {
	return repetitionBoxes(p, "completion_ms", "Δ: completion time (ms)", "Completion time Δ, ",
		"Time for all messages stop-and-wait, one value per repetition: boxes from the first to the third quartile with the median, whiskers at the furthest repetition within 1.5 IQR (study D's box plots).")
}

// repetitionBoxes draws a field's values over repetitions as boxes
// (Tukey's whiskers), per protocol and swept values: study D's plots.
func repetitionBoxes(p panel, field, ylabel, title, caption string) ([]Figure, error) {
	q, cat := p.definedFor(field)
	if len(q.rows) == 0 {
		return nil, nil
	}
	// A category's rows share every swept value (those that do not
	// vary here are constant): the analysis's box is found by them all.
	boxes := map[string]map[string]boxStat{}
	for _, r := range q.rows {
		if boxes[r.Protocol] == nil {
			boxes[r.Protocol] = map[string]boxStat{}
		}
		if b, ok := p.boxOf(r, field, ""); ok {
			boxes[r.Protocol][cat(r)] = b
		}
	}
	pl := groupedBoxes(q.cats, q.protos, boxes, q.xLabel(), ylabel)
	fig, err := render(pl, p.dir, p.stem, title+p.profile, caption, figW, figH)
	return []Figure{fig}, err
}

// drawXiBox draws ξ as the study did: one ratio per repetition, each
// protocol's Δ over the baseline's mean Δ over the repetitions, as boxes
// (the spread is the protocol's alone).
func drawXiBox(p panel) ([]Figure, error) {
	q, cat := p.definedFor("completion_ms")
	if len(q.protos) < 2 {
		return nil, nil
	}
	ref, named := xiReference(p.run.Manifest, q.protos)
	boxes := map[string]map[string]boxStat{}
	var series []string
	for _, proto := range q.protos {
		if proto != ref {
			series = append(series, proto)
			boxes[proto] = map[string]boxStat{}
		}
	}
	for _, r := range q.rows {
		if r.Protocol == ref {
			continue
		}
		if b, ok := p.boxOf(r, analysis.XiPerRepetition, ref); ok {
			boxes[r.Protocol][cat(r)] = b
		}
	}
	why := baselineWhy(named)
	pl := groupedBoxes(q.cats, series, boxes, q.xLabel(), "ξ = T / mean T("+ref+") per repetition")
	fig, err := render(pl, p.dir, p.stem, "Completion ratio ξ per repetition against "+ref+", "+p.profile,
		"Each repetition's completion time Δ over "+ref+"'s ("+why+") mean Δ over the repetitions, as the study divided by the average TCP time, so the spread is the protocol's alone: boxes from the first to the third quartile with the median, whiskers at the furthest repetition within 1.5 IQR (study D's view; the xi figure shows the ratio of the means with its interval).", figW, figH)
	return []Figure{fig}, err
}

// drawReconnectBox draws Δ+ as the study did: the second connection's
// time, once per repetition, as boxes.
func drawReconnectBox(p panel) ([]Figure, error) {
	return repetitionBoxes(p, "reconnect_first_ms", "Δ+: second connection to delivery (ms)", "Reconnection Δ+ per repetition, ",
		"The first measured reconnection of each repetition (the cell's second connection), as the study measured Δ+: boxes from the first to the third quartile with the median, whiskers at the furthest repetition within 1.5 IQR (the reconnect_by_network figure shows the mean over all reconnections).")
}

// baselineWhy says, in a ξ figure's caption, where its reference came
// from (xiReference's named).
func baselineWhy(named bool) string {
	if named {
		return "the scenario's baseline"
	}
	return "the first protocol listed: the scenario names no baseline (baseline: in the scenario)"
}

// xiReference is the protocol ξ divides by: the scenario's baseline
// (study D's presets name mqtt-tls, the study's "traditional TCP/TLS
// approach"), or, when it names none that ran, the first protocol listed,
// which the figure then says it took.
func xiReference(m *results.Manifest, protos []string) (ref string, named bool) {
	if m != nil && slices.Contains(protos, m.Baseline) {
		return m.Baseline, true
	}
	return protos[0], false
}

func drawXi(p panel) ([]Figure, error) {
	q, cat := p.definedFor("completion_ms")
	if len(q.protos) < 2 {
		return nil, nil
	}
	ref, named := xiReference(p.run.Manifest, q.protos)
	why := baselineWhy(named)
	// A category's rows share every swept value (those that do not
	// vary here are constant): the analysis's ξ is found by them all,
	// where both stacks have rows in the category.
	swept := map[string]string{}
	has := map[string]map[string]bool{}
	for _, r := range q.rows {
		swept[cat(r)] = comboLabel(r)
		if has[r.Protocol] == nil {
			has[r.Protocol] = map[string]bool{}
		}
		has[r.Protocol][cat(r)] = true
	}
	ratio, half := map[string]map[string]float64{}, map[string]map[string]float64{}
	var series []string
	for _, proto := range q.protos {
		if proto == ref {
			continue
		}
		series = append(series, proto)
		ratio[proto], half[proto] = map[string]float64{}, map[string]float64{}
		for _, c := range q.cats {
			if !has[ref][c] || !has[proto][c] {
				continue
			}
			cmp, ok := p.run.analysis.XiOf(p.profile, swept[c], ref, proto)
			if !ok {
				continue
			}
			ratio[proto][c] = cmp.Ratio
			// The interval is not symmetric; the bar shows its larger
			// half, so that it never looks tighter than it is.
			half[proto][c] = math.Max(cmp.Ratio-cmp.RatioLow, cmp.RatioHigh-cmp.Ratio)
		}
	}
	pl, err := groupedBars(q.cats, series, ratio, q.xLabel(), "ξ = T / T("+ref+")")
	if err != nil {
		return nil, err
	}
	if err := addErrorBars(pl, q.cats, series, ratio, half); err != nil {
		return nil, err
	}
	fig, err := render(pl, p.dir, p.stem, "Completion ratio ξ against "+ref+", "+p.profile,
		"Mean completion time Δ of each protocol over that of "+ref+" ("+why+") in the same configuration (below 1: faster), with the larger half of its 95 % bootstrap interval over repetitions (comparisons.csv has both ends: metric completion_ms, a = "+ref+", b the protocol, column mean_ratio).", figW, figH)
	return []Figure{fig}, err
}

// drawReconnect draws every network on one figure, from the first
// network's panel.
func drawReconnect(p panel) ([]Figure, error) {
	profiles := ordered(p.run.Rows, func(s results.Summary) string { return s.Profile })
	if len(profiles) == 0 || p.profile != profiles[0] {
		return nil, nil
	}
	all := p
	all.rows = p.run.Rows
	q, cat := all.definedFor("reconnect_ms")
	if len(q.rows) == 0 {
		return nil, nil
	}
	byNet := func(r results.Summary) string {
		if c := cat(r); c != r.Protocol {
			return r.Profile + " / " + c
		}
		return r.Profile
	}
	cats := ordered(q.rows, byNet)
	// Each bar is the analysis's mean over the repetitions of one stack
	// on one network and set of swept values (a category's rows share
	// them all).
	means, half := map[string]map[string]float64{}, map[string]map[string]float64{}
	for _, r := range q.rows {
		c := byNet(r)
		m, ok := p.run.analysis.ReconnectOf(r.Profile, comboLabel(r), r.Protocol)
		if !ok {
			continue
		}
		if means[r.Protocol] == nil {
			means[r.Protocol], half[r.Protocol] = map[string]float64{}, map[string]float64{}
		}
		means[r.Protocol][c], half[r.Protocol][c] = m.Mean, math.Max(m.High-m.Mean, m.Mean-m.Low)
	}
	xl := "network"
	if q.axis != "" {
		xl += " / " + q.axis
	}
	pl, err := groupedBars(cats, q.protos, means, xl, "Δ+: reconnect to delivery (ms)")
	if err != nil {
		return nil, err
	}
	if err := addErrorBars(pl, cats, q.protos, means, half); err != nil {
		return nil, err
	}
	fig, err := render(pl, p.dir, "reconnect_by_network", "Reconnection Δ+ by network",
		"From the start of a new connection's set-up to the subscriber's receipt of the message it carried: the mean over repetitions of each cell's mean, with error bars from the 95 % Student t interval over the repetitions. TLS resumption and QUIC's 0-RTT show here (summary columns resumed and used_0rtt).", figW, figH)
	return []Figure{fig}, err
}
