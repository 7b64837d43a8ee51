package main

import (
	"encoding/json"
	"testing"
)

// TestFlowsimBoundFlagsGiveTheStudysPlateau: study C's scenario 2 states a
// 1 MB stream upper bound, yet its autotuning's and fast autotuning's
// maximum stream windows plateau at 512 KB (../shared/docs/studies.md).
// With the bound given as 512 KiB (--stream-upper) neither allowance's
// window can pass it, and autotuning, which doubles from 8 KiB (8 → 16 →
// ... → 512 KiB is six doublings), reaches it exactly; with the stated
// 1 MiB it may go to 1 MiB. --size sets each stream's data, and a window
// above its bound is refused.
func TestFlowsimBoundFlagsGiveTheStudysPlateau(t *testing.T) {
	maxWindow := func(args ...string) map[string]float64 {
		t.Helper()
		code, out, errs := run(append([]string{"flowsim", "--scenario", "large-buffer", "--allowances", "autotuning,fast-autotuning", "--json"}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		got := map[string]float64{}
		for _, r := range rows {
			got[r["allowance"].(string)] = r["max_stream_window_bytes"].(float64)
			if b, ok := r["bytes_total"].(float64); ok && len(args) > 0 && args[0] == "--size" && b != 4*2<<20 {
				t.Errorf("%v: %s carried %v bytes, want 4 streams × 2 MiB", args, r["allowance"], b)
			}
		}
		return got
	}
	for al, w := range maxWindow("--stream-upper", "512KiB") {
		if al == "autotuning" && w != 512<<10 || w > 512<<10 {
			t.Errorf("--stream-upper 512KiB: %s's largest stream window %v B, want at most (autotuning: exactly) 524288", al, w)
		}
	}
	if w := maxWindow("--size", "2MiB")["autotuning"]; w != 1<<20 {
		t.Errorf("--size 2MiB: autotuning's largest stream window %v B, want the stated 1 MiB bound 1048576", w)
	}
	if code, _, _ := run("flowsim", "--scenario", "large-buffer", "--stream-window", "2MiB"); code != exitUsage {
		t.Errorf("a stream window above its 1 MiB bound: exit %d, want %d", code, exitUsage)
	}
}
