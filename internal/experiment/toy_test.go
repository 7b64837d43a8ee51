package experiment

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/metrics"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
	"tlab/internal/workload"
)

// The toy workload proves the seam: one file registers a workload type and
// a metric, and a scenario runs it through the runner with no other
// change. It sends Rounds requests one after another and counts the round
// trips that took longer than the link's RTT by a margin.
type toy struct {
	Rounds int
	Size   int
}

func init() {
	workload.Register(workload.Type{
		Name: "toy-pingpong", Summary: "test only: serial request/response rounds",
		Params: []workload.Param{{Name: "rounds", Default: "5", Doc: "requests, one after another"}},
		Decode: func(file string, node *yaml.Node, _ workload.Common) (workload.Workload, error) {
			prm := struct {
				Rounds int        `yaml:"rounds"`
				Size   units.Size `yaml:"size"`
			}{Rounds: 5, Size: 100}
			if err := strictyaml.Decode(file, node, &prm); err != nil {
				return nil, err
			}
			if prm.Rounds < 1 {
				return nil, strictyaml.ErrorAt(file, node, "rounds", "rounds must be at least 1")
			}
			return toy{Rounds: prm.Rounds, Size: int(prm.Size)}, nil
		},
	})
	metrics.Register(metrics.Metric{Name: "toy_rounds_done", Kind: metrics.Measured, Header: "ROUNDS",
		Definition: "Test only: completed rounds of the toy workload.",
		Compute: func(in *metrics.Input) float64 {
			n := 0
			for _, r := range in.Records {
				if r.OK() {
					n++
				}
			}
			return float64(n)
		}})
}

func (t toy) Info() workload.Info {
	return workload.Info{Type: "toy-pingpong", Planned: time.Second, Key: []results.Field{{Name: "rounds", Value: float64(t.Rounds)}},
		Roles: workload.ClientServerRoles, Metrics: []string{"toy_rounds_done", "delay_p50_ms"}, Table: []string{"toy_rounds_done"},
		Columns: []string{"toy_round"}, Plots: []string{"delay_cdf"}, Describe: "toy"}
}

func (t toy) Run(ctx context.Context, env *workload.Env) error {
	stop, err := workload.StartServer(env)
	if err != nil {
		return err
	}
	defer stop()
	c, err := workload.NewClient(ctx, env)
	if err != nil {
		return err
	}
	defer c.Close()
	env.StartWindow()
	start := time.Now()
	for i := range t.Rounds {
		sent := time.Since(start)
		ex, err := c.Exchange(ctx, t.Size, t.Size)
		r := results.Record{Seq: i, SentMs: float64(sent.Microseconds()) / 1e3, ReqBytes: t.Size, RespBytes: ex.RespBytes,
			Extra: map[string]float64{"toy_round": float64(i + 1)}}
		if err != nil {
			r.Error = err.Error()
		} else {
			r.DoneMs = float64(ex.Done.Sub(start).Microseconds()) / 1e3
			r.DelayMs = r.DoneMs - r.SentMs
		}
		env.Emit(r)
	}
	return nil
}

// TestToyWorkloadThroughTheSeam registers a workload from one file (this
// one) and runs it through a scenario: decoding, roles, records with the
// workload's own column, and a summary with its own metric.
func TestToyWorkloadThroughTheSeam(t *testing.T) {
	const src = "name: toy\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: toy-pingpong, rounds: %d}\nlink: {rtt: 4ms}\n"
	if _, err := scenario.Parse("toy.yaml", []byte(fmt.Sprintf(src, 0))); err == nil {
		t.Fatal("rounds: 0 was accepted")
	}
	if _, err := scenario.Parse("toy.yaml", []byte(fmt.Sprintf(src, 3)+"workload: {type: toy-pingpong, roundz: 3}\n")); err == nil {
		t.Error("a duplicate workload key was accepted")
	}
	if _, err := scenario.Parse("toy.yaml", []byte("name: toy\nprofiles: [ethernet]\nprotocols: [tcp]\nworkload: {type: toy-pingpong, roundz: 3}\n")); err == nil {
		t.Error("an unknown workload parameter was accepted")
	}
	rows, dir := runText(t, fmt.Sprintf(src, 7))
	if len(rows) != 1 || rows[0].Workload != "toy-pingpong" || rows[0].Int("toy_rounds_done") != 7 || rows[0].Int("rounds") != 7 {
		t.Fatalf("rows: %+v", rows)
	}
	if p50 := rows[0].Float("delay_p50_ms"); !(p50 >= 4) {
		t.Errorf("round trip p50 %.3f ms below the 4 ms RTT", p50)
	}
	rr, err := results.Open(dir)
	if err != nil || len(rr.Rows) != 1 || rr.Rows[0].Int("toy_rounds_done") != 7 {
		t.Fatalf("reading the run back: %v %+v", err, rr)
	}
	recs := readCSV(t, filepath.Join(dir, "records.csv"))
	col := -1
	for i, h := range recs[0] {
		if h == "toy_round" {
			col = i
		}
	}
	if col < 0 || len(recs) != 8 || recs[7][col] != "7.0000" {
		t.Errorf("records.csv: the toy's own column: header %v, %d rows", recs[0], len(recs))
	}
}
