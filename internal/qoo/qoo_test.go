package qoo

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/results"
)

// at makes a latency distribution from percentile points.
func at(points map[float64]float64) func(float64) float64 {
	return func(p float64) float64 {
		if v, ok := points[p]; ok {
			return v
		}
		return math.NaN()
	}
}

// TestTheDraftsExample is draft-ietf-ippm-qoo-09's own example, section
// "Example": ROP {99 %: 200 ms, 99.9 %: 300 ms} and 1 % loss, CPUP
// {99 %: 500 ms, 99.9 %: 600 ms} and 5 % loss, a minimum throughput of
// 4 Mbps; measured 350 and 375 ms, 2 % and 28 Mbps: m1 = 0.5, m2 = 0.75,
// QoO_latency 50, QoO_loss 75, QoO_throughput 100, QoO 50.
func TestTheDraftsExample(t *testing.T) {
	p := Profile{ID: "x", Name: "x",
		Latency:           []LatencyPoint{{99, 200, 500}, {99.9, 300, 600}},
		Loss:              Bounds{Optimal: 1, Unacceptable: 5},
		MinThroughputMbps: 4}
	r := p.Score(Measurement{LatencyAt: at(map[float64]float64{99: 350, 99.9: 375}), LossPct: 2, ThroughputMbps: 28})
	if r.Latency != 50 || r.Loss != 75 || r.Throughput != 100 || r.Score != 50 || r.Limit != "p99" {
		t.Errorf("latency %v, loss %v, throughput %v, QoO %v, limited by %s; the draft works out 50, 75, 100, 50, p99", r.Latency, r.Loss, r.Throughput, r.Score, r.Limit)
	}
}

// TestThroughputIsAStep is the draft's throughput component,
// QoO_throughput = (M_Throughput >= R_Throughput) ? 100 : 0: the draft's
// example network below its 4 Mbps scores 0 whatever its latency, at the
// bound it meets it, and a profile without a minimum never reads it.
func TestThroughputIsAStep(t *testing.T) {
	p := Profile{ID: "x", Name: "x", Latency: []LatencyPoint{{99, 200, 500}}, Loss: Bounds{Optimal: 1, Unacceptable: 5}, MinThroughputMbps: 4}
	good := func(mbps float64) Measurement {
		return Measurement{LatencyAt: func(float64) float64 { return 100 }, ThroughputMbps: mbps}
	}
	for _, c := range []struct {
		name  string
		mbps  float64
		want  float64
		limit string
	}{
		{"28 Mbps, the draft's", 28, 100, "p99"},
		{"at the minimum", 4, 100, "p99"},
		{"just below it", 3.99, 0, "throughput"},
		{"nothing measured", math.NaN(), 0, "throughput"},
	} {
		r := p.Score(good(c.mbps))
		if r.Score != c.want || r.Limit != c.limit {
			t.Errorf("%s: QoO %v limited by %s, want %v by %s", c.name, r.Score, r.Limit, c.want, c.limit)
		}
	}
	none := p
	none.MinThroughputMbps = 0
	if r := none.Score(good(math.NaN())); r.Score != 100 || r.Throughput != 100 {
		t.Errorf("no minimum: QoO %v, throughput %v; want 100 and 100, the throughput unread", r.Score, r.Throughput)
	}
}

// TestScoresWorkedByHand: the three regions the draft names (optimal,
// between, unacceptable), loss deciding, a distribution with nothing
// completed, bounds without room, and LibreQoS's normalizations.
func TestScoresWorkedByHand(t *testing.T) {
	p := Profile{ID: "x", Name: "x", Latency: []LatencyPoint{{95, 20, 40}}, Loss: Bounds{Optimal: 0, Unacceptable: 4}}
	for _, c := range []struct {
		name      string
		lat, loss float64
		want      float64
		limit     string
	}{
		{"optimal", 15, 0, 100, "p95"},
		{"at the optimal bound", 20, 0, 100, "p95"},
		{"a quarter of the way", 25, 0, 75, "p95"},
		{"at the unacceptable bound", 40, 0, 0, "p95"},
		{"beyond it", 400, 0, 0, "p95"},
		{"loss decides: 1 % of 4", 15, 1, 75, "loss"},
		{"loss beyond its bound", 15, 10, 0, "loss"},
		{"nothing completed", math.NaN(), 100, 0, "p95"},
		{"infinite", math.Inf(1), 0, 0, "p95"},
	} {
		r := p.Score(Measurement{LatencyAt: func(float64) float64 { return c.lat }, LossPct: c.loss})
		if !(math.Abs(r.Score-c.want) <= 1e-9) || r.Limit != c.limit {
			t.Errorf("%s: QoO %v limited by %s, want %v by %s", c.name, r.Score, r.Limit, c.want, c.limit)
		}
	}
	step := Profile{ID: "s", Name: "s", Latency: []LatencyPoint{{50, 10, 10}}, Loss: Bounds{0, 0}}
	if a, b := step.Score(Measurement{LatencyAt: func(float64) float64 { return 10 }}), step.Score(Measurement{LatencyAt: func(float64) float64 { return 10.1 }}); a.Score != 100 || b.Score != 0 {
		t.Errorf("bounds without room: %v at the bound and %v beyond, want a step 100 / 0", a.Score, b.Score)
	}
	// threshold_offset_ms 10: 35 scores as 25; excess over p5 (15 ms): 35 as 20.
	off := p
	off.Normalization = Normalization{Mode: "threshold_offset_ms", OffsetMs: 10}
	if r := off.Score(Measurement{LatencyAt: func(float64) float64 { return 35 }}); r.Score != 75 {
		t.Errorf("offset 10 ms: QoO %v, want 75", r.Score)
	}
	exc := p
	exc.Normalization = Normalization{Mode: "excess_over_baseline", BaselinePercentile: 5}
	if r := exc.Score(Measurement{LatencyAt: at(map[float64]float64{5: 15, 95: 35})}); r.Score != 100 {
		t.Errorf("excess over p5: QoO %v, want 100 (20 ms above the baseline)", r.Score)
	}
}

// TestReadsLibreQoSProfiles: a profiles file as LibreQoS writes it (its
// "low" the bad bound, "high" the good one) reads with the draft's
// meaning, and tlab's own table parses and says where each number comes
// from.
func TestReadsLibreQoSProfiles(t *testing.T) {
	f, err := Parse("qoo_profiles.json", strings.NewReader(`{
  "schema_version": 2,
  "default_profile_id": "web_browsing",
  "profiles": [
    {"id": "web_browsing", "name": "Web browsing",
     "latency": [{"percentile": 95, "low_ms": 250, "high_ms": 50}],
     "loss_percent": {"low": 5, "high": 0.5},
     "latency_normalization": {"mode": "excess_over_baseline", "baseline": {"type": "percentile", "percentile": 5}},
     "loss_handling": "confidence_weighted"}
  ]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := f.Lookup("web_browsing")
	want := LatencyPoint{Percentile: 95, OptimalMs: 50, UnacceptableMs: 250}
	if !ok || f.Default != "web_browsing" || p.Latency[0] != want || p.Loss != (Bounds{Optimal: 0.5, Unacceptable: 5}) || p.Normalization.BaselinePercentile != 5 {
		t.Errorf("read %+v", f)
	}
	b := Builtin()
	if len(b.Profiles) < 4 {
		t.Fatalf("built-in profiles: %v", b.IDs())
	}
	for _, p := range b.Profiles {
		if !strings.Contains(p.Description, "tlab's choice") && !strings.Contains(p.Description, "study") {
			t.Errorf("%s: its description does not say where its numbers come from", p.ID)
		}
	}
}

// TestBadProfilesSayWhereAndWhy: each defect is an error naming the file
// and, where the decoder can, its line.
func TestBadProfilesSayWhereAndWhy(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"{\"schema_version\": 2,\n \"profiles\": [{\"id\": \"a\", \"nmae\": \"x\"}]}", "p.json:2:"},
		{"{\"schema_version\": 2,\n \"profiles\": [\n{\"id\": \"a\", \"name\": \"x\", \"latency\": \"fast\"}]}", "p.json:3:"},
		{`{"schema_version": 1, "profiles": []}`, "schema_version 1"},
		{`{"schema_version": 2, "profiles": [{"id": "a", "name": "a", "latency": [{"percentile": 101, "low_ms": 1, "high_ms": 0}], "loss_percent": {"low": 1, "high": 0}}]}`, "percentile 101"},
		{`{"schema_version": 2, "profiles": [{"id": "a", "name": "a", "latency": [], "loss_percent": {"low": 1, "high": 0}}]}`, "at least one percentile"},
		{`{"schema_version": 2, "profiles": [{"id": "a", "name": "a", "latency": [{"percentile": 95, "low_ms": 1, "high_ms": 0}], "loss_percent": {"low": 200, "high": 0}}]}`, "0 to 100"},
		{`{"schema_version": 2, "default_profile_id": "b", "profiles": [{"id": "a", "name": "a", "latency": [{"percentile": 95, "low_ms": 1, "high_ms": 0}], "loss_percent": {"low": 1, "high": 0}}]}`, `"b" names no profile`},
		{`{"schema_version": 2, "profiles": [{"id": "a", "name": "a", "latency": [{"percentile": 95, "low_ms": 1, "high_ms": 0}], "loss_percent": {"low": 1, "high": 0}, "loss_handling": "lenient"}]}`, "loss_handling"},
		{`{"schema_version": 2, "profiles": [{"id": "a", "name": "a", "latency": [{"percentile": 95, "low_ms": 1, "high_ms": 0}], "loss_percent": {"low": 1, "high": 0}, "throughput_min_mbps": -4}]}`, "throughput_min_mbps"},
	} {
		_, err := Parse("p.json", strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n  error %v, want it to say %q", c.text, err, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(builtin)
	if b, err := os.ReadFile("profiles.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"schema_version": 2, "profiles": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz", strings.NewReader(string(data)))
		if err != nil {
			return
		}
		for _, p := range file.Profiles {
			r := p.Score(Measurement{LatencyAt: func(float64) float64 { return 10 }, LossPct: 1})
			if !(r.Score >= 0 && r.Score <= 100) {
				t.Fatalf("%s scored %v", p.ID, r.Score)
			}
		}
	})
}

// TestWireReadsBack: a profile written alone, as a run's manifest keeps
// it, reads back the same, normalizations and the throughput minimum
// included.
func TestWireReadsBack(t *testing.T) {
	for _, p := range append(Builtin().Profiles,
		Profile{ID: "o", Name: "o", Latency: []LatencyPoint{{95, 10, 40}}, Loss: Bounds{0.5, 3}, Normalization: Normalization{Mode: "threshold_offset_ms", OffsetMs: 7}},
		Profile{ID: "b", Name: "b", Latency: []LatencyPoint{{99.9, 10, 40}}, Loss: Bounds{0, 3}, Normalization: Normalization{Mode: "excess_over_baseline", BaselinePercentile: 5}},
		Profile{ID: "t", Name: "t", Latency: []LatencyPoint{{50, 10, 40}}, Loss: Bounds{0, 3}, MinThroughputMbps: 4}) {
		f, err := Parse("wire", strings.NewReader(string(p.Wire())))
		if err != nil {
			t.Fatalf("%s: %v\n%s", p.ID, err, p.Wire())
		}
		got := f.Profiles[0]
		if p.Normalization.Mode == "" {
			p.Normalization.Mode = "none"
		}
		if got.ID != p.ID || got.Loss != p.Loss || got.Normalization != p.Normalization || got.MinThroughputMbps != p.MinThroughputMbps || got.PerInterval != p.PerInterval || len(got.Latency) != len(p.Latency) || got.Latency[0] != p.Latency[0] {
			t.Errorf("%s read back as %+v, written %+v", p.ID, got, p)
		}
	}
}

// TestPerIntervalFollowsThePeriod: control-loop's bounds are multiples of
// the cell's interval: at d = 25 ms they are control-loop-25ms's (12.5 →
// 25 ms), so a p99 of 18.75 ms scores 50; at d = 100 ms the same p99 is
// optimal (100), at d = 5 ms unacceptable (0). A cell's scores come from
// its own interval_ms; records without that column are an error.
func TestPerIntervalFollowsThePeriod(t *testing.T) {
	b := Builtin()
	cl, ok := b.Lookup("control-loop")
	fixed, _ := b.Lookup("control-loop-25ms")
	if !ok || !cl.PerInterval {
		t.Fatalf("control-loop: %+v", cl)
	}
	if got := cl.ForInterval(25); got.Latency[0] != fixed.Latency[0] || got.Loss != fixed.Loss || got.PerInterval {
		t.Errorf("control-loop at 25 ms is %+v, want control-loop-25ms's bounds %+v", got.Latency, fixed.Latency)
	}
	p99 := Measurement{LatencyAt: func(float64) float64 { return 18.75 }}
	for d, want := range map[float64]float64{5: 0, 25: 50, 100: 100} {
		if r := cl.ForInterval(d).Score(p99); r.Score != want {
			t.Errorf("p99 18.75 ms at d = %g ms: QoO %v, want %v", d, r.Score, want)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "records.csv")
	w, err := results.CreateRecords(path, results.Cell{ID: "d25", Profile: "5g", Protocol: "tcp", Rep: 1, Key: []results.Field{{Name: "interval_ms", Value: 25.0}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		w.Write(results.Record{Seq: i, DelayMs: 18.75, DoneMs: float64(i)})
	}
	w.Close()
	scores, err := CellScores(path, cl)
	if err != nil || scores["d25"].Score != 50 {
		t.Errorf("CellScores: %+v %v, want d25 scored 50 against 12.5 → 25 ms", scores, err)
	}
	bare := filepath.Join(dir, "bare.csv")
	w, _ = results.CreateRecords(bare, results.Cell{ID: "c", Profile: "5g", Protocol: "tcp", Rep: 1}, nil)
	w.Write(results.Record{Seq: 0, DelayMs: 1, DoneMs: 1})
	w.Close()
	if _, err := CellScores(bare, cl); err == nil || !strings.Contains(err.Error(), "interval_ms") {
		t.Errorf("records without interval_ms: %v, want an error naming the column", err)
	}
	if _, left := BuiltinJSON(); len(left) != 1 || left[0] != "control-loop" {
		t.Errorf("tlab qoo --json left out %v, want control-loop alone", left)
	}
}

// TestCellScoresHandWorked scores one cell worked by hand with the draft's
// formulas (draft-ietf-ippm-qoo-09: a component is
// 100·(1 − (M − ROP)/(CPUP − ROP)) clamped to 0..100, the throughput a step
// at its minimum, QoO the minimum of the components).
//
// The cell: 10 warm-up records (500 ms, 100 kB, done at 10 s: left out,
// else every number below moves), then 100 measured ones of which every
// tenth failed and the 90 others took 1, 2, … 90 ms, each 1250 bytes, done
// in reverse order (the first answer finished last, at 90 ms: a
// multiplexed client's answers complete out of order).
//
//   - latency: p90 of the 90 completed delays, type 7: h = (90−1)·0.9 =
//     80.1, between the 81st and 82nd values (81 and 82 ms): 81.1 ms;
//     against ROP 61.1, CPUP 101.1: 1 − 20/40 = 50.
//   - loss: 10 of 100 measured = 10 % (percent, not 0.1); against 5 and
//     15 %: 1 − 5/10 = 50.
//   - goodput: 90·1250·8 bit over the latest completion, 90 ms: 10 Mbit/s,
//     which meets a 10 Mbit/s minimum (100) and misses 10.5 (0).
func TestCellScoresHandWorked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.csv")
	w, err := results.CreateRecords(path, results.Cell{ID: "c", Profile: "5g", Protocol: "tcp", Rep: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	seq := 0
	for range 10 {
		w.Write(results.Record{Seq: seq, Warmup: true, DelayMs: 500, RespBytes: 100000, DoneMs: 10000})
		seq++
	}
	completed := 0
	for i := range 100 {
		r := results.Record{Seq: seq, SentMs: float64(i)}
		if i%10 == 9 {
			r.Error, r.DelayMs, r.DoneMs = "timeout", math.NaN(), math.NaN()
		} else {
			completed++
			r.DelayMs, r.RespBytes, r.DoneMs = float64(completed), 1250, float64(91-completed)
		}
		w.Write(r)
		seq++
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	profile := Profile{ID: "hand", Name: "hand",
		Latency: []LatencyPoint{{Percentile: 90, OptimalMs: 61.1, UnacceptableMs: 101.1}},
		Loss:    Bounds{Optimal: 5, Unacceptable: 15}}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tc := range []struct {
		minMbps           float64
		score, throughput float64
		limit             string
	}{
		{0, 50, 100, "p90"},
		{10, 50, 100, "p90"},
		{10.5, 0, 0, "throughput"},
	} {
		p := profile
		p.MinThroughputMbps = tc.minMbps
		scores, err := CellScores(path, p)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := scores["c"]
		if !ok || len(scores) != 1 {
			t.Fatalf("scores %+v, want cell c alone", scores)
		}
		if !near(r.Latency, 50) || !near(r.Loss, 50) || !near(r.Score, tc.score) || r.Throughput != tc.throughput || r.Limit != tc.limit {
			t.Errorf("minimum %g Mbit/s: %+v, want latency 50, loss 50, throughput %g, score %g limited by %s", tc.minMbps, r, tc.throughput, tc.score, tc.limit)
		}
	}
}

// TestCellScoresCountAFailedAnswerAsLost: an answer that came back with
// an error (a wrong size, a server error) may carry a delay in a
// records.csv that tlab did not write (its own writer leaves a failed
// record's delay empty; another tool's or a hand-made file need not, and
// CellScores reads both), but it was not delivered: the draft counts it
// lost and leaves it out of the latency and the goodput. The cell, by
// hand: 20 measured requests, 18 answered in 1, 2, … 18 ms with 1250
// bytes, 2 failed after 1000 ms with 1 MB.
//   - loss 2/20 = 10 %, against 5 and 15 %: 1 − 5/10 = 50;
//   - p50 of 1..18, type 7: h = 17·0.5 = 8.5, between 9 and 10 ms: 9.5 ms,
//     against ROP 0 and CPUP 19: 1 − 9.5/19 = 50;
//   - goodput 18·1250·8 bit over the latest completion, 18 ms: 10 Mbit/s,
//     meets a 10 Mbit/s minimum.
//
// Counted as delivered, the two would make the loss 0 (100) and the p50
// 10.5 ms (44.7).
func TestCellScoresCountAFailedAnswerAsLost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.csv")
	var b strings.Builder
	b.WriteString("cell,warmup,delay_ms,resp_bytes,done_ms,error\n")
	for i := range 18 {
		fmt.Fprintf(&b, "c,false,%d,1250,%d,\n", i+1, i+1)
	}
	for range 2 {
		b.WriteString("c,false,1000,1000000,1000,wrong response size\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Profile{ID: "hand", Name: "hand",
		Latency:           []LatencyPoint{{Percentile: 50, OptimalMs: 0, UnacceptableMs: 19}},
		Loss:              Bounds{Optimal: 5, Unacceptable: 15},
		MinThroughputMbps: 10}
	scores, err := CellScores(path, p)
	if err != nil {
		t.Fatal(err)
	}
	r := scores["c"]
	if !(math.Abs(r.Latency-50) > 1e-9 || math.Abs(r.Loss-50) > 1e-9 || r.Throughput != 100 || math.Abs(r.Score-50) <= 1e-9) {
		t.Errorf("%+v, want latency 50, loss 50, throughput 100, score 50", r)
	}
}
