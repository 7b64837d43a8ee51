package analysis

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tlab/internal/qoo"
	"tlab/internal/results"
)

// countingOpener opens files as os.Open does and counts the opens and
// the bytes read of each path.
type countingOpener struct {
	opens map[string]int
	bytes map[string]int64
}

func (c *countingOpener) open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c.opens[path]++
	return &countingFile{f, c, path}, nil
}

type countingFile struct {
	*os.File
	c    *countingOpener
	path string
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.c.bytes[f.path] += int64(n)
	return n, err
}

// loadRunWithRecords is a run of two stacks on one network, unrepeated,
// swept over cross.flows 0 and 2, with requirements and a Quality of
// Outcome profile, and records for each cell: every step that reads
// records has some to read (the comparisons the delays, the load effects
// the delays, the answer each cell's outcome).
func loadRunWithRecords(t *testing.T) *results.Run {
	t.Helper()
	p, ok := qoo.Builtin().Lookup("control-loop-25ms")
	if !ok {
		t.Fatal("no built-in profile control-loop-25ms")
	}
	var rows []results.Summary
	var recs strings.Builder
	recs.WriteString("cell,warmup,error,delay_ms,resp_bytes,done_ms,interval_ms\n")
	for _, flows := range []string{"0", "2"} {
		for i, proto := range []string{"tcp", "quic"} {
			r := row("5g", proto, 1, 10+float64(i), results.Param{Key: LoadKey, Value: flows})
			r.Cell = "5g-" + proto + "-" + flows
			rows = append(rows, r)
			for k := 0; k < 40; k++ {
				fmt.Fprintf(&recs, "%s,%v,,%g,256,%d,25\n", r.Cell, k < 5, 10+float64(i)+float64(k%7), 25*k)
			}
		}
	}
	run := writeRun(t, &results.Manifest{Scenario: "once", Seed: 3, Params: []string{LoadKey},
		Requirements: []string{"delay_p99_ms <= 30"}, QoO: p.Wire()}, rows)
	if err := os.WriteFile(filepath.Join(run.Dir, results.RecordsFile), []byte(recs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return run
}

// TestViewReadsTheRecordsOnce: the comparisons, the load effects and the
// answer's Quality of Outcome each read the records (three scans of
// records.csv before the view), but the run's analysis opens records.csv
// once and reads it through once: its size in bytes, not more.
func TestViewReadsTheRecordsOnce(t *testing.T) {
	run := loadRunWithRecords(t)
	c := &countingOpener{opens: map[string]int{}, bytes: map[string]int64{}}
	a, err := OfView(NewView(run, c.open), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each step used the records: request-level verdicts, load effects,
	// and an outcome for every stack.
	if len(a.Verdicts) == 0 || a.Verdicts[0].Unit != "request" {
		t.Fatalf("verdicts %+v: the comparisons did not read the records", a.Verdicts)
	}
	if len(a.Load) == 0 {
		t.Fatal("no load effects: the load step did not read the records")
	}
	if len(a.Answers) == 0 || a.Answers[0].Stacks[0].QoO == nil {
		t.Fatalf("answers %+v: the answer scored no cell", a.Answers)
	}
	path := filepath.Join(run.Dir, results.RecordsFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.opens[path] != 1 || c.bytes[path] != st.Size() {
		t.Errorf("records.csv opened %d times, %d bytes read; want once, %d bytes (its size)", c.opens[path], c.bytes[path], st.Size())
	}
}
