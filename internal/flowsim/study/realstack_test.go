package study

import (
	"context"
	"errors"
	"testing"
	"time"
	_ "tlab/internal/proto/all" // quic-streams
	"tlab/internal/racedetect"
	"tlab/internal/testbed/tbtest"

	"tlab/internal/flowsim"
)

// TestFlowControlOnQuicGo runs study C's small-buffer windows on quic-go
// through the emulated link (with less data, to stay quick): static windows
// must never be seen above their size, autotuned ones must grow but stay
// under their bound, the qlog must account for every byte of every stream,
// and autotuning must finish faster than static.
func TestMain(m *testing.M) { tbtest.Main(m) }

func TestFlowControlOnQuicGo(t *testing.T) {
	tbtest.RequirePrivileges(t)
	cfg := flowsim.Scenarios()["small-buffer"][0]
	cfg.BytesPerStream = 256 << 10
	runs := map[bool]FlowControlRun{}
	for _, static := range []bool{true, false} {
		run, err := RunFlowControl(context.Background(), FlowControlSpec{Config: cfg, Static: static, Seed: 1, Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("static=%v: %v", static, err)
		}
		runs[static] = run
		res := run.Result
		t.Logf("%s: %.2f Mbit/s, %.3f s, %d stream and %d connection updates, %d blocked, max stream window %d, max conn window %d",
			res.Allowance, res.ThroughputMbps, res.CompletionS, run.StreamUpdates, run.ConnUpdates, run.Blocked, res.MaxStreamWin, res.MaxConnWin)
		if len(run.Records) != cfg.Streams || res.BytesTotal != int64(cfg.Streams)*cfg.BytesPerStream {
			t.Fatalf("%s: %d records, %d bytes", res.Allowance, len(run.Records), res.BytesTotal)
		}
		// Each stream carries tlab's 4-byte response length and the data.
		last := res.Series[len(res.Series)-1]
		for i, b := range last.Received {
			if b != cfg.BytesPerStream+4 {
				t.Errorf("%s: the qlog shows stream %d with %d of %d bytes", res.Allowance, i, b, cfg.BytesPerStream+4)
			}
		}
		upper, connUpper := cfg.StreamUpper, cfg.ConnUpper
		if static {
			upper, connUpper = cfg.StreamWindow, cfg.ConnWindow
		}
		if res.MaxStreamWin > upper || res.MaxConnWin > connUpper {
			t.Errorf("%s: windows %d/%d seen above their bounds %d/%d", res.Allowance, res.MaxStreamWin, res.MaxConnWin, upper, connUpper)
		}
		if run.StreamUpdates == 0 || run.ConnUpdates == 0 {
			t.Errorf("%s: no window updates in the qlog", res.Allowance)
		}
	}
	if auto := runs[false].Result; auto.MaxStreamWin <= cfg.StreamWindow {
		t.Errorf("autotuning never grew the stream window past %d", auto.MaxStreamWin)
	}
	if s, a := runs[true].Result.CompletionS, runs[false].Result.CompletionS; a >= s {
		t.Errorf("autotuning took %.3f s, static %.3f s", a, s)
	}
}

// TestFlowControlStopsWhenCancelled cancels a transfer that would take
// half a minute: it must end within seconds, with the context's error.
func TestFlowControlStopsWhenCancelled(t *testing.T) {
	tbtest.RequirePrivileges(t)
	cfg := flowsim.Scenarios()["small-buffer"][0]
	cfg.BytesPerStream = 16 << 20
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := RunFlowControl(ctx, FlowControlSpec{Config: cfg, Static: true, Seed: 1, Dir: t.TempDir()})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's deadline", err)
	}
	if took := time.Since(start); took > time.Duration(racedetect.Slowdown())*5*time.Second {
		t.Fatalf("the cancelled transfer took %v to stop", took)
	}
}
