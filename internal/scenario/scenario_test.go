package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	_ "tlab/internal/proto/all" // every protocol family registers itself

	"tlab/internal/workload"
	"tlab/scenarios"
)

const base = `name: t
profiles: [ethernet, 5g]
protocols: [tcp, h3]
workload:
  type: periodic
  interval: 25ms
  payload: 256
duration: 2s
`

const framesBase = `name: f
profiles: [ethernet]
protocols: [udp, rtp]
duration: 2s
workload:
  type: frames
  size: 20000
`

func TestPresetsAreValid(t *testing.T) {
	for _, name := range scenarios.Names() {
		if suite, isSuite, err := scenarios.ReadSuite(name); isSuite {
			if err != nil || len(suite.Parts) < 2 {
				t.Errorf("suite %s: %v (%d parts)", name, err, len(suite.Parts))
			}
			continue // its parts are presets of their own
		}
		data, _ := scenarios.Read(name)
		s, err := Parse(name+".yaml", data)
		if err != nil {
			t.Errorf("preset %s: %v", name, err)
			continue
		}
		cells, err := s.Cells()
		if err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
		// Study A's Fig. 4 is "the average number of TCP sessions
		// established per 1000 requests in a series of experiments"
		// (../shared/docs/studies.md): more than one experiment per
		// configuration, how many the study does not say.
		if name == "study-a-full" && (s.Repetitions < 2 || len(cells) != 288*s.Repetitions) {
			t.Errorf("study A full has %d cells in %d repetitions, want a series (2 or more) of 4 x 3 x 6 x 4 = 288", len(cells), s.Repetitions)
		}
	}
}

func TestMatrixExpansion(t *testing.T) {
	src := base + "repetitions: 2\nmatrix:\n  workload.interval: [5ms, 50ms]\n  workload.payload: [128, 1024, 4KiB]\n"
	s, err := Parse("m.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells, points, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// 2 profiles x 2 intervals x 3 payloads x 2 protocols x 2 repetitions.
	if len(cells) != 48 {
		t.Fatalf("%d cells, want 48", len(cells))
	}
	seen := map[string]bool{}
	for _, c := range cells {
		if seen[c.ID] {
			t.Fatalf("duplicate cell id %s", c.ID)
		}
		seen[c.ID] = true
		iv, pl := c.Params[0].Value, c.Params[1].Value
		if got := points[c.Point].WorkloadSpec().(workload.Periodic).Interval.String(); got != map[string]string{"5ms": "5ms", "50ms": "50ms"}[iv] {
			t.Errorf("cell %s: interval %s, want %s", c.ID, got, iv)
		}
		want := map[string]int64{"128": 128, "1024": 1024, "4KiB": 4096}[pl]
		if int64(points[c.Point].WorkloadSpec().(workload.Periodic).ReqSize) != want {
			t.Errorf("cell %s: payload %d, want %d", c.ID, points[c.Point].WorkloadSpec().(workload.Periodic).ReqSize, want)
		}
	}
	// The same seed gives the same random order; another seed another.
	order := func(seed string) string {
		s, _ := Parse("r.yaml", []byte(src+"order: random\nseed: "+seed+"\n"))
		cells, _ := s.Cells()
		var ids []string
		for _, c := range cells {
			ids = append(ids, c.ID[6:])
		}
		return strings.Join(ids, ",")
	}
	first, again, other := order("7"), order("7"), order("8")
	if first != again || first == other {
		t.Error("random order is not a function of the seed")
	}
}

func TestAnyFieldCanBeSweptAndOverridden(t *testing.T) {
	// tls_version must reach a protocol that uses it: h1s does.
	src := strings.Replace(base, "[tcp, h3]", "[tcp, h1s]", 1) + "matrix:\n  link.loss: [0%, 5%]\n  settings.tls_version: [\"1.2\", \"1.3\"]\n"
	s, err := Parse("m.yaml", []byte(src), "duration=3s", "workload.payload=512")
	if err != nil {
		t.Fatal(err)
	}
	cells, points, _ := s.Expand()
	if len(cells) != 16 {
		t.Fatalf("%d cells, want 16", len(cells))
	}
	for _, c := range cells {
		link, err := points[c.Point].LinkFor(c.Profile)
		if err != nil {
			t.Fatal(err)
		}
		lossy := link.Up.Loss.Rate == 0.05
		if lossy != (c.Params[0].Value == "5%") {
			t.Errorf("cell %s: loss %v", c.ID, link.Up.Loss)
		}
		if points[c.Point].ProtoSettings().TLSVersion != c.Params[1].Value {
			t.Errorf("cell %s: TLS %s", c.ID, points[c.Point].ProtoSettings().TLSVersion)
		}
		if points[c.Point].Duration.String() != "3s" || points[c.Point].WorkloadSpec().(workload.Periodic).ReqSize != 512 {
			t.Errorf("overrides lost: %v %v", points[c.Point].Duration, points[c.Point].WorkloadSpec().(workload.Periodic).ReqSize)
		}
	}
}

// TestValidationErrorsSayWhereAndWhat covers each kind of mistake.
func TestValidationErrorsSayWhereAndWhat(t *testing.T) {
	cases := []struct{ src, want string }{
		{strings.Replace(base, "duration: 2s", "duraton: 2s", 1), `bad.yaml:8: unknown key "duraton"`},
		{strings.Replace(base, "interval: 25ms", "interval: 25", 1), "bad.yaml:6: "},
		{strings.Replace(base, "interval: 25ms", "interval: 25 parsecs", 1), "not a duration"},
		{strings.Replace(base, "[tcp, h3]", "[tcp, h4]", 1), `bad.yaml:3: unknown protocol "h4"`},
		{strings.Replace(base, "[ethernet, 5g]", "[ethernet, 6g]", 1), `bad.yaml:2: no profile "6g"`},
		{strings.Replace(base, "duration: 2s", "duration: 2s\norder: sideways", 1), "bad.yaml:9: order"},
		{base + "matrix:\n  workload.intervall: [5ms]\n", `unknown key "intervall"`},
		{base + "matrix:\n  workload.interval: 5ms\n", "bad.yaml:10: matrix workload.interval: want a non-empty list"},
		{base + "matrix:\n  workload.interval: [5ms, -3ms]\n", "bad.yaml:10"},
		{base + "settings:\n  tls_version: \"1.1\"\n", "bad.yaml:10: settings: tls version"},
		{base + "settings:\n  tls_version: \"1.2\"\n", "bad.yaml:10: settings.tls_version: none of tcp, h3 uses it (it applies to h1s, h2, mqtt-tls, tls)"},
		{base + "settings:\n  tls_versoin: \"1.2\"\n", `bad.yaml:10: unknown key "tls_versoin"`},
		{base + "plots: [pie]\n", `bad.yaml:9: plot "pie"`},
		{base + "require: [\"delay_p99_ms<=20\", \"delay_p99<=20\"]\n", `bad.yaml:9: requirement "delay_p99<=20": no metric "delay_p99"`},
		{base + "require: [\"delay_p99_ms<=20s\"]\n", `bad.yaml:9: requirement "delay_p99_ms<=20s": delay_p99_ms is in "ms", not "s"`},
		{base + "baseline: quic\n", `bad.yaml:9: baseline "quic": not one of the scenario's protocols (tcp, h3)`},
		{"name: t\n", "profiles: give at least one"},
		{strings.Replace(base, "[tcp, h3]", "[tcp, h3, tcp]", 1), `bad.yaml:3: protocol "tcp" is listed twice`},
		{strings.Replace(base, "[ethernet, 5g]", "[5g, 5g]", 1), `bad.yaml:2: profile "5g" is listed twice`},
		{strings.Replace(base, "interval: 25ms", "interval: 0ms", 1), "bad.yaml:6: workload.interval 0s"},
		{strings.Replace(base, "payload: 256", "payload: 100000000", 1), "bad.yaml:7: workload.payload 100000000 B: want 0 to 67108864 B"},
		{strings.Replace(base, "duration: 2s", "duration: -5s", 1), `bad.yaml:8: duration "-5s" is negative`},
		{base + "count: 5\n", "give duration or count, not both"},
		{strings.Replace(base, "duration: 2s", "duration: 30h", 1), "bad.yaml:8: a cell would hold 4320000 records"},
		// An error inside link: names the line of the bad field.
		{base + "link:\n  rate: 10Mbit\n  up:\n    loss: 200%\n", "bad.yaml:12: loss: probability"},
		{base + "link:\n  queue: fq_codell\n", `bad.yaml:10: queue "fq_codell": want one of codel, droptail`},
		{base + "link:\n  rate: 10Mbit\n  queue:\n    type: codel\n    flows: 3\n", "bad.yaml:13: queue codel does not take flows"},
		{base + "link:\n  rat: 10Mbit\n", `bad.yaml:10: unknown key "rat"`},
		{base + "emulator:\n  engine: turbo\n", `bad.yaml:10: emulator engine "turbo": want ring or mmsg`},
		{base + "emulator:\n  arrival: soon\n", `bad.yaml:10: emulator arrival "soon": want kernel or read`},
		// A payload far beyond the link: refused at the parameter, with
		// the figure (12.8 Gbit/s against ethernet's 1 Gbit/s).
		{strings.Replace(base, "payload: 256", "payload: 40MB", 1), "bad.yaml:7: the workload offers 12.8Gbit up, 13 times what profile ethernet carries up (1Gbit)"},
		{base + "link:\n  rate: 1kbit\n", "the workload offers 81.92kbit up, 82 times what profile ethernet carries up (1kbit)"},
		// A frame server's bounds, refused where they are written (a
		// reassembly timeout of 3 ns made the server's ticker panic).
		{framesBase + "  reassembly_timeout: 3ns\n", "bad.yaml:8: workload.reassembly_timeout 3ns: want 1ms to 10s"},
		{framesBase + "  reassembly_timeout: 1h\n", "bad.yaml:8: workload.reassembly_timeout 1h0m0s: want 1ms to 10s"},
		{framesBase + "  result_size: 70000\n", "bad.yaml:8: workload.result_size 70000 B: want 12 to 1400 B"},
		{framesBase + "  fps: 5000\n", "bad.yaml:8: workload.fps 5000: want more than 0 and at most 1000"},
	}
	for _, c := range cases {
		_, err := Parse("bad.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant an error containing %q", c.src, err, c.want)
		}
	}
	if _, err := Parse("o.yaml", []byte(base), "nokey"); err == nil || !strings.Contains(err.Error(), "key=value") {
		t.Errorf("bad --set: %v", err)
	}
}

func TestLoadReadsFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(p, []byte(base), 0o644)
	s, err := Load(p)
	if err != nil || s.File() != p {
		t.Fatalf("%v %v", s, err)
	}
	y, _ := s.YAML()
	if !strings.Contains(string(y), "interval: 25ms") {
		t.Errorf("resolved YAML: %s", y)
	}
}

// TestDocExamplesAreValid: the example scenarios the documentation points
// to parse and expand.
func TestDocExamplesAreValid(t *testing.T) {
	files, _ := filepath.Glob("../../docs/examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no example under docs/examples")
	}
	for _, f := range files {
		s, err := Load(f)
		if err == nil {
			_, err = s.Cells()
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestOverloadBetweenOneAndTenTimesWarns: a workload offering more than
// its link carries, but within ten times, is an overload experiment: it
// validates, with a warning at the parameter's line giving the figure; at
// or under the link's rate there is no warning.
func TestOverloadBetweenOneAndTenTimesWarns(t *testing.T) {
	// 256 B every 25 ms is 81.92 kbit/s of payload each way (the
	// response is as large by default): 2 times 40.96 kbit, on both
	// profiles.
	s, err := Parse("o.yaml", []byte(base+"link:\n  rate: 40960bit\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, points, err := s.Expand()
	if err != nil {
		t.Fatal(err)
	}
	w := PointWarnings(points)
	if len(w) != 4 || !strings.Contains(w[0], "o.yaml:7: the workload offers 81.92kbit up, 2.0 times what profile ethernet carries up") ||
		!strings.Contains(w[1], "81.92kbit down, 2.0 times what profile ethernet") || !strings.Contains(w[3], "profile 5g carries down") {
		t.Errorf("warnings: %q", w)
	}
	s, err = Parse("o.yaml", []byte(base+"link:\n  rate: 81920bit\n"))
	if err != nil || len(s.Warnings()) != 0 {
		t.Errorf("at the link's rate: %v %q", err, s.Warnings())
	}
}

// TestMessageThatCannotFitTheQueueWarns: a frame of 151 200 B is 105 full
// frames of 1448 B; a drop-tail queue of 50 packets cannot hold it, and
// the scenario says so at the parameter, naming the profile; a queue of
// 200 packets can, and an AQM's own limit is not judged here.
func TestMessageThatCannotFitTheQueueWarns(t *testing.T) {
	src := "name: f\nprofiles: [ethernet]\nprotocols: [udp]\nworkload:\n  type: frames\n  size: 151200\nduration: 2s\nlink:\n  rate: 500Mbit\n  queue_packets: QUEUE\n"
	s, err := Parse("f.yaml", []byte(strings.Replace(src, "QUEUE", "50", 1)))
	if err != nil {
		t.Fatal(err)
	}
	w := s.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "f.yaml:6: one message of") || !strings.Contains(w[0], "is 105 full frames, and profile ethernet's up queue holds 50") {
		t.Errorf("warnings: %q", w)
	}
	if s, err := Parse("f.yaml", []byte(strings.Replace(src, "QUEUE", "200", 1))); err != nil || len(s.Warnings()) != 0 {
		t.Errorf("a queue of 200: %v %q", err, s.Warnings())
	}
	aqm := strings.Replace(src, "queue_packets: QUEUE", "queue: codel", 1)
	if s, err := Parse("f.yaml", []byte(aqm)); err != nil || len(s.Warnings()) != 0 {
		t.Errorf("an AQM: %v %q", err, s.Warnings())
	}
}

// TestQueueRoomCountsBothBounds: the engine bounds a queue by packets and
// by bytes at once, so the validator's warning that a message cannot fit
// the queue must too: the 5g profile's 1000-packet queue overridden with
// 10 KB of bytes holds 6 full frames, and a 151 kB frame is warned of.
func TestQueueRoomCountsBothBounds(t *testing.T) {
	src := "name: q\nprofiles: [5g]\nprotocols: [udp]\nworkload: {type: frames, size: 151000}\nduration: 2s\nlink: {up: {queue_bytes: 10KB}}\n"
	sc, err := Parse("q.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(sc.Warnings(), "\n")
	if !strings.Contains(w, "up queue holds 6") {
		t.Errorf("no warning that a 151 kB frame overflows a 10 KB queue; warnings:\n%s", w)
	}
	// The profile's own queue (1000 packets, no byte bound) holds it.
	sc, err = Parse("q.yaml", []byte(strings.Replace(src, "link: {up: {queue_bytes: 10KB}}\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(sc.Warnings(), "\n"); strings.Contains(w, "up queue holds") {
		t.Errorf("a warning for a queue that holds the frame: %s", w)
	}
}

// TestManyStationsWarnWithTheFigure: a shared access of more stations
// than tlab measured its emulator with is accepted, with a warning at the
// swept value that gives the measured error; up to StationsMeasured, none.
func TestManyStationsWarnWithTheFigure(t *testing.T) {
	src := "name: st\nprofiles: [wifi-shared]\nprotocols: [mqtt-tcp]\ntopology:\n  type: shared-access\n  stations: 3\n  station: publisher\n  server: broker\n  then: [subscriber]\nworkload: {type: pubsub, messages: 10}\nmatrix:\n  topology.stations: [STATIONS]\n"
	for _, c := range []struct {
		stations string
		warn     bool
	}{{"3, 8", false}, {"32", false}, {"33", true}, {"64", true}} {
		s, err := Parse("st.yaml", []byte(strings.Replace(src, "STATIONS", c.stations, 1)))
		if err != nil {
			t.Fatalf("%s stations: %v", c.stations, err)
		}
		_, points, err := s.Expand()
		if err != nil {
			t.Fatalf("%s stations: %v", c.stations, err)
		}
		w := PointWarnings(points)
		switch {
		case c.warn && (len(w) != 1 || !strings.Contains(w[0], "st.yaml:12: topology: stations "+c.stations) || !strings.Contains(w[0], "0.94 ms at 64")):
			t.Errorf("%s stations: warnings %q, want one at line 12 with the measured error", c.stations, w)
		case !c.warn && len(w) != 0:
			t.Errorf("%s stations: warnings %q, want none", c.stations, w)
		}
	}
}

// TestRecordBudgetTakesAnHourAtOneMillisecond: an hour of requests every
// millisecond (3.6 million records, docs/methodology.md's long cell) is
// accepted; two hours (7.2 million) are refused at the duration's line,
// naming the budget and what it costs.
func TestRecordBudgetTakesAnHourAtOneMillisecond(t *testing.T) {
	src := "name: b\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: periodic, interval: 1ms}\nduration: DURATION\n"
	if _, err := Parse("b.yaml", []byte(strings.Replace(src, "DURATION", "1h", 1))); err != nil {
		t.Errorf("an hour at 1 ms: %v", err)
	}
	_, err := Parse("b.yaml", []byte(strings.Replace(src, "DURATION", "2h", 1)))
	if err == nil || !strings.Contains(err.Error(), "b.yaml:5: a cell would hold 72") || !strings.Contains(err.Error(), "budget of 4000000 (about 3 GiB of memory") {
		t.Errorf("two hours at 1 ms: %v, want the budget refused at duration's line", err)
	}
}

// repetitions: 0 is a number a user wrote, not an absent field: it is
// refused where it was written (it silently meant 1), in a file and in
// --set. Left out, repetitions is still 1.
func TestZeroRepetitionsIsRefused(t *testing.T) {
	if _, err := Parse("bad.yaml", []byte(base+"repetitions: 0\n")); err == nil || !strings.Contains(err.Error(), "bad.yaml:9: repetitions") {
		t.Errorf("repetitions: 0 in a file: %v", err)
	}
	if _, err := Parse("o.yaml", []byte(base), "repetitions=0"); err == nil || !strings.Contains(err.Error(), "repetitions must be at least 1") {
		t.Errorf("--set repetitions=0: %v", err)
	}
	s, err := Parse("o.yaml", []byte(base))
	if err != nil || s.Repetitions != 1 {
		t.Errorf("repetitions left out: %v, %v; want 1", s, err)
	}
}

// TestListFieldGivenAsTextShowsTheList: --set protocols=tcp,quic is a
// string where a list belongs; the error writes the list to type.
func TestListFieldGivenAsTextShowsTheList(t *testing.T) {
	_, err := Parse("o.yaml", []byte(base), "protocols=tcp,quic")
	if err == nil || !strings.Contains(err.Error(), "[tcp, quic]") {
		t.Errorf("--set protocols=tcp,quic: %v; want the fix [tcp, quic]", err)
	}
}
