package advise

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"tlab/internal/results"
)

func units(m string) (string, bool) {
	u, ok := map[string]string{"delay_p99_ms": "ms", "jitter_pct": "%", "bytes_per_request": "B"}[m]
	return u, ok
}

// rows makes repetitions of a protocol on a network with the given
// delay_p99_ms values.
func rows(profile, protocol string, p99 ...float64) []results.Summary {
	var out []results.Summary
	for i, v := range p99 {
		out = append(out, results.Summary{Cell: fmt.Sprintf("%s-%s-%d", profile, protocol, i), Profile: profile, Protocol: protocol, Rep: i + 1,
			Fields: []results.Field{{Name: "delay_p99_ms", Value: v}, {Name: "jitter_pct", Value: 5.0}, {Name: "failed_pct", Value: 0.0}, {Name: "quality", Value: "clean"}}})
	}
	return out
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Requirement{
		"delay_p99_ms<=20":       {"delay_p99_ms", "<=", 20},
		" delay_p99_ms <= 20ms":  {"delay_p99_ms", "<=", 20},
		"jitter_pct<10%":         {"jitter_pct", "<", 10},
		"bytes_per_request>=1e2": {"bytes_per_request", ">=", 100},
	} {
		got, err := Parse(in, units)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"delay_p99<=20":      "no metric",
		"delay_p99_ms<=20s":  `in "ms", not "s"`,
		"delay_p99_ms=20":    "want METRIC OP BOUND",
		"delay_p99_ms<=fast": "want METRIC OP BOUND",
	} {
		if _, err := Parse(in, units); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want %q", in, err, want)
		}
	}
}

// TestEvaluate: meets (interval inside the bound), fails (outside),
// undecided (straddling; too few repetitions near the bound; a disturbed
// cell), the best by the priority requirement, and a tie.
func TestEvaluate(t *testing.T) {
	var rs []results.Summary
	rs = append(rs, rows("5g", "quic", 12, 12.5, 13, 12.2)...)    // meets, best
	rs = append(rs, rows("5g", "tcp", 12.4, 12.9, 13.1, 12.6)...) // meets, overlaps quic: tie
	rs = append(rs, rows("5g", "h1s", 25, 26, 27, 25.5)...)       // fails
	rs = append(rs, rows("5g", "h3", 18, 22, 19, 21)...)          // straddles 20: undecided
	rs = append(rs, rows("wifi", "quic", 19.5)...)                // one repetition near the bound: undecided
	rs = append(rs, rows("wifi", "tcp", 30)...)                   // one repetition, clearly over: fails
	dist := rows("lan", "tcp", 1, 1, 1)
	dist[1].Set("quality", "disturbed: emulator release error")
	rs = append(rs, dist...)
	rs = append(rs, rows("lan", "quic", 5, 5.1, 4.9)...) // meets
	reqs := []Requirement{{"delay_p99_ms", "<=", 20}, {"jitter_pct", "<=", 10}}
	answers, err := Evaluate(rs, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != 3 {
		t.Fatalf("%d answers", len(answers))
	}
	status := func(a Answer) map[string]Status {
		m := map[string]Status{}
		for _, s := range a.Stacks {
			m[s.Protocol] = s.Status
		}
		return m
	}
	g := answers[0]
	if s := status(g); s["quic"] != Meets || s["tcp"] != Meets || s["h1s"] != Fails || s["h3"] != Undecided {
		t.Errorf("5g: %v", s)
	}
	if g.Best != "quic" || len(g.Tie) != 1 || g.Tie[0] != "tcp" || !strings.Contains(g.Summary, "cannot be told from it") ||
		!strings.Contains(g.ToDecide, "--set repetitions=5") || !strings.Contains(g.ToDecide, "max_repetitions") {
		t.Errorf("5g: best %q tie %v: %s / %s", g.Best, g.Tie, g.Summary, g.ToDecide)
	}
	for _, s := range g.Stacks {
		c := s.Checks[0]
		if s.Protocol == "h1s" && !(c.Margin < 0 && c.Low > 20) {
			t.Errorf("h1s: margin %v, interval %v–%v", c.Margin, c.Low, c.High)
		}
		if s.Protocol == "quic" && !(math.Abs(c.Value-12.425) < 1e-9 && c.Margin > 7 && c.High < 20) {
			t.Errorf("quic: %+v", c)
		}
	}
	w := answers[1]
	if s := status(w); s["quic"] != Undecided || s["tcp"] != Fails || w.Best != "" || Met(answers) {
		t.Errorf("wifi: %v, best %q, met %v", s, w.Best, Met(answers))
	}
	l := answers[2]
	if s := status(l); s["tcp"] != Undecided || s["quic"] != Meets || l.Best != "quic" {
		t.Errorf("lan: %v best %q", s, l.Best)
	}
	// Without wifi every network has a stack that meets them: exit 0.
	if !Met([]Answer{answers[0], answers[2]}) || !slices.Equal(Everywhere([]Answer{answers[0], answers[2]}), []string{"quic"}) {
		t.Errorf("quic meets both 5g and lan: Met %v, everywhere %v", Met([]Answer{answers[0], answers[2]}), Everywhere([]Answer{answers[0], answers[2]}))
	}
	// A best on each network, but not the same stack: no one choice
	// meets them everywhere.
	split, _ := Evaluate(append(append(append(rows("x", "a", 5, 5, 5), rows("x", "b", 50, 50, 50)...), rows("y", "a", 50, 50, 50)...), rows("y", "b", 5, 5, 5)...), []Requirement{{"delay_p99_ms", "<=", 20}})
	if split[0].Best != "a" || split[1].Best != "b" || Met(split) || len(Everywhere(split)) != 0 {
		t.Errorf("split: best %q and %q, met %v, everywhere %v", split[0].Best, split[1].Best, Met(split), Everywhere(split))
	}
	// One repetition each: values within 10 % cannot be told apart.
	one, _ := Evaluate(append(append(rows("y", "a", 12.6), rows("y", "b", 12.8)...), rows("y", "c", 15)...), []Requirement{{"delay_p99_ms", "<=", 25}})
	if one[0].Best != "a" || len(one[0].Tie) != 1 || one[0].Tie[0] != "b" {
		t.Errorf("one repetition: best %q, tie %v", one[0].Best, one[0].Tie)
	}
	// A requirement pointing up: the best is the largest.
	up, _ := Evaluate(append(rows("x", "a", 30, 31, 32), rows("x", "b", 40, 41, 42)...), []Requirement{{"delay_p99_ms", ">=", 10}})
	if up[0].Best != "b" {
		t.Errorf("with >=, best %q, want b", up[0].Best)
	}
}

// TestAnswersAsJSON: an answer without an interval (one repetition) or
// with a metric the run lacks is still JSON (tlab advise --json), its
// missing numbers null.
func TestAnswersAsJSON(t *testing.T) {
	answers, err := Evaluate(rows("5g", "tcp", 12), []Requirement{{"delay_p99_ms", "<=", 20}, {"bytes_per_request", "<=", 600}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(answers)
	if err != nil {
		t.Fatal(err)
	}
	var back []struct {
		Stacks []struct {
			Checks []struct {
				Value *float64 `json:"value"`
				Low   *float64 `json:"ci_low"`
			} `json:"checks"`
		} `json:"stacks"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	c := back[0].Stacks[0].Checks
	if c[0].Value == nil || *c[0].Value != 12 || c[0].Low != nil || c[1].Value != nil {
		t.Errorf("%s", b)
	}
}

func TestEverywhereSentenceCountsNetworksInWords(t *testing.T) {
	network := func(name string, meeting ...string) Answer {
		a := Answer{Profile: name}
		for _, p := range []string{"quic", "tcp"} {
			st := Fails
			if slices.Contains(meeting, p) {
				st = Meets
			}
			a.Stacks = append(a.Stacks, Stack{Protocol: p, Status: st})
		}
		return a
	}
	for _, c := range []struct {
		answers []Answer
		want    string
	}{
		{[]Answer{network("wifi", "quic")}, ""},
		{[]Answer{network("wifi", "quic"), network("lte", "quic", "tcp")}, "quic meets every requirement on both networks"},
		{[]Answer{network("wifi", "quic", "tcp"), network("lte", "quic", "tcp")}, "quic, tcp meet every requirement on both networks"},
		{[]Answer{network("wifi", "tcp"), network("lte", "quic"), network("5g", "quic")}, "no stack meets every requirement on all 3 networks"},
		// No requirement given (a Quality of Outcome alone): nothing to say.
		{Skeleton([]results.Summary{{Cell: "a", Profile: "wifi", Protocol: "tcp"}, {Cell: "b", Profile: "lte", Protocol: "tcp"}}), ""},
	} {
		if got := EverywhereSentence(c.answers); got != c.want {
			t.Errorf("%d networks: got %q, want %q", len(c.answers), got, c.want)
		}
	}
}

// quick's first answer on a quiet host: ethernet's cells disturbed by the
// emulator's release error (p99 0.04 to 0.33 ms against 5 % of a 0.70 ms
// median: 35 µs) left its verdicts undecided, and the "to decide" line
// must name that, not ask for more repetitions (the same host disturbs
// them again). The reasons are written as the quality rule writes them
// (package experiment, Quality.Disturbance).
func TestToDecideNamesTheDisturbance(t *testing.T) {
	reason := func(rel float64) string {
		return fmt.Sprintf("disturbed: emulator release error p99 %.2f ms is over 5 %% of the median delay 0.70 ms", rel)
	}
	quic := rows("ethernet", "quic", 1, 1.1, 0.9)
	for i, rel := range []float64{0.04, 0.33, 0.12} {
		quic[i].Set("quality", reason(rel))
	}
	tcp := rows("ethernet", "tcp", 1, 1, 1.1)
	tcp[2].Set("quality", reason(0.2)+"; the host stole 12.0 % of the CPU time")
	answers, err := Evaluate(append(append(rows("ethernet", "h3", 1, 1, 1), quic...), tcp...), []Requirement{{"delay_p99_ms", "<=", 20}})
	if err != nil || len(answers) != 1 {
		t.Fatalf("%v, %d answers", err, len(answers))
	}
	got := answers[0].ToDecide
	// By hand: 4 of quic's and tcp's 6 cells; release p99 0.04–0.33 ms;
	// 5 % of 0.70 ms = 35 µs; one CPU-steal reason.
	for _, want := range []string{"the host disturbed 4 of the 6 cells of quic, tcp", "release error p99 0.04–0.33 ms against 5 % of a median delay of 0.70 ms",
		"35 µs", "the hypervisor stole CPU time (1)", "whatever the repetitions", "quieter host"} {
		if !strings.Contains(got, want) {
			t.Errorf("to decide %q: want %q in it", got, want)
		}
	}
	if strings.Contains(got, "--set repetitions") {
		t.Errorf("to decide %q asks for more repetitions, which the same host disturbs again", got)
	}
	// A verdict open by its interval (h3 straddling the bound) as well:
	// both reasons.
	h3 := rows("ethernet", "h3", 18, 22, 19)
	answers, _ = Evaluate(append(h3, quic...), []Requirement{{"delay_p99_ms", "<=", 20}})
	if got := answers[0].ToDecide; !strings.Contains(got, "the host disturbed 3 of the 3 cells of quic") || !strings.Contains(got, "--set repetitions=5") {
		t.Errorf("to decide %q: want the disturbance and more repetitions", got)
	}
	// Nothing disturbed: more repetitions only.
	answers, _ = Evaluate(h3, []Requirement{{"delay_p99_ms", "<=", 20}})
	if got := answers[0].ToDecide; strings.Contains(got, "disturbed") || !strings.Contains(got, "--set repetitions=5") {
		t.Errorf("to decide %q: want more repetitions only", got)
	}
}
