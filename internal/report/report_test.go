package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"tlab/internal/proto"
	_ "tlab/internal/proto/all" // every protocol, for the colour check

	"gonum.org/v1/plot/vg"

	"tlab/internal/advise"
	"tlab/internal/analysis"
	"tlab/internal/results"
)

// TestReportFromSyntheticRows builds a report from rows written by package
// results alone (no namespace, no run): every asked-for plot that the rows
// support is drawn and inlined, and a plot the rows cannot support is
// named in a note instead of breaking the report.
func TestReportFromSyntheticRows(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for i, proto := range []string{"tcp", "h3"} {
		cc := map[string]string{"tcp": "cubic"}[proto] // h3 does not run over TCP: no value
		for _, iv := range []string{"5ms", "25ms"} {
			rows = append(rows, results.Summary{Cell: proto + iv, Profile: "5g", Protocol: proto, Workload: "periodic", Rep: 1, Seed: 1,
				Fields: []results.Field{{Name: "delay_p5_ms", Value: 10.0 + float64(i)}, {Name: "delay_p25_ms", Value: 11.0}, {Name: "delay_p50_ms", Value: 12.0},
					{Name: "delay_p75_ms", Value: 13.0}, {Name: "delay_p95_ms", Value: 15.0}, {Name: "jitter_pct", Value: 3.0}, {Name: "tcp_congestion", Value: cc}, {Name: "emu_release_p99_us", Value: 12.0}, {Name: "emu_cpu_s", Value: 0.5}},
				Params: []results.Param{{Key: "workload.interval", Value: iv}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Sysctls: map[string]string{"net.ipv4.tcp_congestion_control": "bbr"}, Scenario: "synthetic", Description: "rows made by a test", Params: []string{"workload.interval"}, Plots: []string{"delay_box", "jitter_bars", "bytes_bars"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	for _, want := range []string{`<figure id="delay_box-1-5g">`, `<figure id="jitter_bars-1-5g">`, `plot &#34;bytes_bars&#34;: the rows lack bytes_per_request`, "synthetic", "rows made by a test", "EMU p99 us", "EMU CPU s",
		"cubic in every row over TCP (kernel default: bbr)"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := strings.Count(page, `src="data:image/svg`); n != 2 {
		t.Errorf("%d inlined figures, want 2", n)
	}
	for _, f := range []string{"delay_box-1-5g.svg", "delay_box-1-5g.png", "jitter_bars-1-5g.png"} {
		if _, err := os.Stat(filepath.Join(dir, "plots", f)); err != nil {
			t.Errorf("plot file %s: %v", f, err)
		}
	}
}

// TestProtocolsLabelTheAxisWhenNothingIsSwept: without swept fields each
// protocol gets its own labelled place on the x axis of box and bar plots.
func TestProtocolsLabelTheAxisWhenNothingIsSwept(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for _, proto := range []string{"tcp", "h3"} {
		rows = append(rows, results.Summary{Cell: proto, Profile: "lan", Protocol: proto, Workload: "periodic", Rep: 1,
			Fields: []results.Field{{Name: "delay_p5_ms", Value: 1.0}, {Name: "delay_p25_ms", Value: 2.0}, {Name: "delay_p50_ms", Value: 3.0},
				{Name: "delay_p75_ms", Value: 4.0}, {Name: "delay_p95_ms", Value: 5.0}, {Name: "jitter_pct", Value: 3.0}}})
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	(&results.Manifest{Scenario: "flat", Params: []string{}, Plots: []string{"delay_box", "jitter_bars"}}).Save(dir)
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Build(r, nil); err != nil {
		t.Fatal(err)
	}
	// The x axis's tick labels are the protocols (a legend naming them is
	// not enough: that is what the plots had before, with one unlabelled
	// tick).
	pn := panel{run: r, rows: rows, protos: []string{"tcp", "h3"}, cats: []string{""}}
	_, cats := pn.category()
	pl := groupedBoxes(cats, pn.protos, map[string]map[string]boxStat{"tcp": {"tcp": {P5: 1, P25: 2, P50: 3, P75: 4, P95: 5}}, "h3": {"h3": {P5: 1, P25: 2, P50: 3, P75: 4, P95: 5}}}, pn.xLabel(), "ms")
	var labels []string
	for _, tk := range pl.X.Tick.Marker.Ticks(pl.X.Min, pl.X.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if strings.Join(labels, ",") != "tcp,h3" {
		t.Errorf("x tick labels %v, want tcp,h3", labels)
	}
}

// TestVerdictsSayWhenTooFewRepetitions: a run whose comparisons cannot be
// significant (the analysis's UnreachableP: 0.1 for 3 against 3) says so
// above its verdicts, and says nothing otherwise (0).
func TestVerdictsSayWhenTooFewRepetitions(t *testing.T) {
	if s := powerNote(0.1); !strings.Contains(s, "is 0.1,") {
		t.Errorf("3 against 3: %q", s)
	}
	if s := powerNote(0); s != "" {
		t.Errorf("comparisons that could be significant: %q", s)
	}
}

// TestEveryProtocolHasItsOwnColour: every registered protocol has a colour
// of its own, the same in every plot, and no two share one.
func TestEveryProtocolHasItsOwnColour(t *testing.T) {
	seen := map[color.RGBA]string{}
	for _, name := range proto.Names() {
		c, ok := protocolColors[name]
		if !ok {
			t.Errorf("%s has no colour in protocolColors", name)
			continue
		}
		if other, dup := seen[c]; dup {
			t.Errorf("%s and %s share a colour", name, other)
		}
		seen[c] = name
	}
	if colorOf("no-such-protocol") != colorOf("no-such-protocol") {
		t.Error("an unknown name's colour is not stable")
	}
}

// TestReportSaysThePathWasReal: a remote run's report names the agent,
// its identity and the path's checks, and shows the unmeasured bytes as
// empty rather than 0.
func TestReportSaysThePathWasReal(t *testing.T) {
	dir := t.TempDir()
	rows := []results.Summary{{Cell: "c1", Profile: "remote", Protocol: "tcp", Workload: "periodic", Rep: 1, Seed: 1,
		Fields: []results.Field{{Name: "delay_p50_ms", Value: 21.5}, {Name: "bytes_per_request", Value: math.NaN()}}}}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "remote", Table: []string{"delay_p50_ms", "bytes_per_request"}, Remote: &results.Remote{Address: "192.0.2.7:7447", Fingerprint: "ab12cd", Hostname: "far",
		Checks: []results.PathCheck{{Phase: "start", RTTMinMs: 20.25, RTTMedianMs: 20.5, OffsetMs: -3.5, UncertaintyMs: 10.125}, {Phase: "end", RTTMinMs: 20.75}}}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	for _, want := range []string{"A real path", "192.0.2.7:7447", "ab12cd", "20.25", "-3.50", "10.12", "20.75"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestReportShowsTheCalibration: the run's calibration appears with its
// mode, its engine and each check, a failed one marked.
func TestReportShowsTheCalibration(t *testing.T) {
	dir := t.TempDir()
	rows := []results.Summary{{Cell: "c1", Profile: "ethernet", Protocol: "tcp", Workload: "periodic", Rep: 1, Seed: 1,
		Fields: []results.Field{{Name: "delay_p50_ms", Value: 1.5}}}}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "cal", Table: []string{"delay_p50_ms"}, Calibrations: []*results.Calibration{{
		Mode: "busy", Engine: "ring", Verdict: "emulator",
		Checks: []results.Check{{Name: "release_error_5ms_p999", Value: 999.5, Unit: "us", Target: "<= 100"}},
	}}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	for _, want := range []string{"mode busy, engine ring)", "release_error_5ms_p999", "999.5", "FAIL"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// buildPage analyses the run in dir, as the step after a sweep does,
// builds its report and returns its page.
func buildPage(t *testing.T, dir string) string {
	t.Helper()
	rr, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := analysis.Of(rr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Write(dir); err != nil {
		t.Fatal(err)
	}
	r, err := FromRun(rr)
	if err != nil {
		t.Fatal(err)
	}
	path, err := Build(r, a)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(html)
}

// TestReportOpensWithTheAnswer: a run given requirements opens its report
// with which stack meets them.
func TestReportOpensWithTheAnswer(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for i, p := range []string{"tcp", "h1s"} {
		for rep := 1; rep <= 3; rep++ {
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s%d", p, rep), Profile: "5g", Protocol: p, Rep: rep,
				Fields: []results.Field{{Name: "delay_p99_ms", Value: 12 + 10*float64(i) + 0.1*float64(rep)}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "answer", Requirements: []string{"delay_p99_ms <= 20"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	for _, want := range []string{"The answer", "tcp meets every requirement, best by delay_p99_ms", "delay_p99_ms &lt;= 20"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Index(page, "The answer") > strings.Index(page, "<h2>Run</h2>") {
		t.Error("the answer does not open the report")
	}
}

// TestReportSaysWhatTheLoadAdds: a run sweeping cross.flows from 0 gets
// "Latency under load": per network, protocol and queue what the load
// adds to p50 (with its interval) and p99, and load.csv.
func TestReportSaysWhatTheLoadAdds(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for _, q := range []string{"droptail", "fq_codel"} {
		for _, flows := range []string{"0", "1"} {
			added := 0.0
			if flows == "1" && q == "droptail" {
				added = 9
			}
			for rep := 1; rep <= 4; rep++ {
				rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s-%s-%d", q, flows, rep), Profile: "5g", Protocol: "tcp", Rep: rep,
					Params: []results.Param{{Key: "link.queue", Value: q}, {Key: "cross.flows", Value: flows}},
					Fields: []results.Field{{Name: "delay_p50_ms", Value: 11 + added + 0.1*float64(rep)}, {Name: "delay_p99_ms", Value: 13 + 2*added + 0.1*float64(rep)}}})
			}
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Manifest{Scenario: "load", Seed: 1, Params: []string{"link.queue", "cross.flows"}}).Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	for _, want := range []string{"<h2>Latency under load</h2>",
		`<td class="l">droptail</td><td>1</td><td>11.25</td><td>20.25</td><td>9.00 (`, // p50 adds 9
		`<td>13.25</td><td>31.25</td><td>18.00</td>`,                                  // p99 adds 18
		`<td class="l">fq_codel</td><td>1</td><td>11.25</td><td>11.25</td><td>0.00 (`} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "load.csv")); err != nil || strings.Count(string(b), "\n") < 3 {
		t.Errorf("load.csv: %v\n%s", err, b)
	}
}

// TestReportWithUndefinedValues: a metric that could not be measured (NaN:
// a remote run's emulator figures, bytes under cross traffic, a stack
// whose every request failed) shows as "-" in the table and leaves its
// box out of the plot, and the page never says NaN.
func TestReportWithUndefinedValues(t *testing.T) {
	dir := t.TempDir()
	nan := math.NaN()
	var rows []results.Summary
	for i, proto := range []string{"tcp", "h3"} {
		p50 := 12.0 + float64(i)
		if proto == "h3" {
			p50 = nan // every request failed
		}
		rows = append(rows, results.Summary{Cell: proto, Profile: "5g", Protocol: proto, Workload: "periodic", Rep: 1, Seed: 1,
			Fields: []results.Field{{Name: "delay_p5_ms", Value: p50}, {Name: "delay_p25_ms", Value: p50}, {Name: "delay_p50_ms", Value: p50},
				{Name: "delay_p75_ms", Value: p50}, {Name: "delay_p95_ms", Value: p50}, {Name: "delay_p99_ms", Value: p50},
				{Name: "jitter_pct", Value: nan}, {Name: "bytes_per_request", Value: nan}, {Name: "emu_release_p99_us", Value: nan}}})
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "undefined", Seed: 1, Plots: []string{"delay_box", "jitter_bars", "bytes_bars"}, Requirements: []string{"delay_p99_ms <= 20"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	if strings.Contains(page, "NaN") || strings.Contains(page, "Inf") {
		t.Error("the page shows NaN or Inf")
	}
	// The h3 row: its delays and the others are "–", not 0.
	row := regexp.MustCompile(`<tr><td class="l">5g</td><td class="l">h3</td>.*</tr>`).FindString(page)
	if row == "" || strings.Count(row, "<td>-</td>") < 5 || strings.Contains(row, "<td>0.00</td>") {
		t.Errorf("h3's row: %s", row)
	}
	// h3 cannot meet a requirement it has no value for.
	if !strings.Contains(page, "not measured in this run") {
		t.Error("the answer does not say h3's delay was not measured")
	}
	if !strings.Contains(page, `<figure id="delay_box-1-5g">`) {
		t.Error("one undefined stack took the whole plot away")
	}
}

// TestReportWithPercentilesBeyondAnyBound: a frame round trip whose
// median fell among frames that never came back is +Inf; the report
// still draws (gonum refuses an infinite point) and says which point it
// left out, and the table shows inf.
func TestReportWithPercentilesBeyondAnyBound(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for i, size := range []float64{4500, 151256} {
		for _, proto := range []string{"tcp", "udp"} {
			rtt := 20.0 + float64(i)
			if proto == "udp" && size > 5000 {
				rtt = math.Inf(1) // most large frames lost
			}
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s%d", proto, i), Profile: "lte", Protocol: proto, Workload: "frames", Rep: 1, Seed: 1,
				Fields: []results.Field{{Name: "frame_bytes", Value: size}, {Name: "frame_rtt_p50_ms", Value: rtt}, {Name: "jitter_rfc3550_ms", Value: 1.0}},
				Params: []results.Param{{Key: "workload.resolution", Value: fmt.Sprint(size)}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "beyond", Seed: 1, Plots: []string{"rtt_by_size"}, Params: []string{"workload.resolution"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	if !strings.Contains(page, "so not drawn: udp at 151.256 kB") {
		t.Error("the plot does not say which point is beyond any bound")
	}
}

// TestBuildOnlyRenders: report.Build draws and writes the page and
// computes nothing: no comparisons, load, replay or answers file appears
// because of it (the analysis step writes those), and what it shows of
// the answer is the analysis it was given.
func TestBuildOnlyRenders(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for rep := 1; rep <= 4; rep++ {
		for i, p := range []string{"tcp", "h3"} {
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s-%d", p, rep), Profile: "lan", Protocol: p, Workload: "periodic", Rep: rep,
				Fields: []results.Field{{Name: "delay_p50_ms", Value: 3.0 + float64(i)}, {Name: "delay_p99_ms", Value: 5.0 + float64(i)}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	(&results.Manifest{Scenario: "flat", Params: []string{}, Plots: []string{"delay_box"}, Requirements: []string{"delay_p99_ms <= 20"}}).Save(dir)
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	given := &analysis.Analysis{Answers: []advise.Answer{{Profile: "lan", Best: "h3"}}, Requirements: []advise.Requirement{{Metric: "delay_p99_ms", Op: "<=", Bound: 20}}}
	path, err := Build(r, given)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"comparisons.json", "comparisons.csv", "load.csv", "replay.csv", analysis.AnswersFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("report.Build wrote %s", f)
		}
	}
	page, _ := os.ReadFile(path)
	if !strings.Contains(string(page), "The answer") {
		t.Error("the page does not show the answer it was given")
	}
}

// TestBoxWithAMissingQuantileDoesNotHang: a summary whose median is
// finite but another quantile is not (a merged or compared run can carry
// one) made the box plot's data range NaN and the axis loop for ever;
// the box is left out instead, and the plot is drawn.
func TestBoxWithAMissingQuantileDoesNotHang(t *testing.T) {
	nan := math.NaN()
	stats := map[string]map[string]boxStat{
		"tcp": {"": {P5: nan, P25: 2, P50: 3, P75: 4, P95: 5}},
		"h3":  {"": {P5: 1, P25: 2, P50: 3, P75: 4, P95: 6}},
	}
	done := make(chan error, 1)
	go func() {
		_, err := render(groupedBoxes([]string{""}, []string{"tcp", "h3"}, stats, "", "ms"), t.TempDir(), "box", "t", "c", 4*vg.Inch, 3*vg.Inch)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("drawing a box with a missing quantile did not end")
	}
}

// TestManyWarningsFoldAfterTheFirstThree: five warnings show the first
// three above the answer and fold the last two under "2 more warnings";
// none is lost.
func TestManyWarningsFoldAfterTheFirstThree(t *testing.T) {
	dir := t.TempDir()
	rows := []results.Summary{{Cell: "c1", Profile: "ethernet", Protocol: "tcp", Workload: "periodic", Rep: 1, Seed: 1,
		Fields: []results.Field{{Name: "delay_p50_ms", Value: 1.5}}}}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "warned", Table: []string{"delay_p50_ms"},
		Warnings: []string{"first w", "second w", "third w", "fourth w", "fifth w"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	fold := strings.Index(page, "<details><summary class=\"fail\">2 more warnings</summary>")
	if fold < 0 {
		t.Fatalf("no fold counting 2 more warnings in the page")
	}
	for i, w := range m.Warnings {
		at := strings.Index(page, "Warning: "+w)
		if at < 0 {
			t.Errorf("warning %q lost", w)
			continue
		}
		if folded := at > fold; folded != (i >= 3) {
			t.Errorf("warning %d %q folded %v, want folded only from the fourth", i+1, w, folded)
		}
	}
}
