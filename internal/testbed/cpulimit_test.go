package testbed

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"tlab/internal/emu"
)

// spinShare starts a CPU-bound loop in h and returns the cores it used
// over window, from the host's cgroup cpu.stat. The loop's group gets
// the weight of a nice -20 task so that the other load of a shared
// machine (here often ten runnable tasks per core) cannot starve it: CFS
// weighs nice -20 at 88761 against 1024 for nice 0 (kernel/sched/core.c
// sched_prio_to_weight), so against twenty such tasks it still gets
// 88761/(88761+20*1024) = 0.81 of a core, above the 0.5 the limit
// allows. The group, not the task, is what competes at the top, so the
// weight is the group's. The quota binds whatever the weight.
func spinShare(t *testing.T, h *Host, window time.Duration) float64 {
	t.Helper()
	g := h.cpu
	switch {
	case g.v1 != "":
		if err := os.WriteFile(g.v1+"/cpu.shares", []byte("88761"), 0); err != nil {
			t.Fatal(err)
		}
	default:
		// cpu.weight 100 is shares 1024; its top, 10000, is 102400.
		if err := os.WriteFile(g.v2+"/cpu.weight", []byte("8668"), 0); err != nil {
			t.Fatal(err)
		}
	}
	p, err := h.Start(exec.Command("sh", "-c", "while :; do :; done"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	time.Sleep(200 * time.Millisecond) // past the shell's start
	u0, err := h.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(window)
	u1, err := h.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	return float64(u1-u0) / float64(time.Since(t0))
}

// TestCPULimitHoldsAHostToItsQuota: a loop in a host limited to 0.5 CPU
// gets half a core. Bounds: at most 0.55, the quota (50 ms per 100 ms)
// plus one bandwidth slice (kernel.sched_cfs_bandwidth_slice_us, 5 ms)
// that a period may overrun; at least 0.9 of what the same loop gets in
// a host whose limit cannot bind (all the machine's cores), measured just
// before, or of 0.5 when that is more: the machine's other load, not the
// limit, is what may hold the loop below its quota. Without the quota
// written, the loop gets the reference's share (about one core) and
// fails the upper bound.
func TestCPULimitHoldsAHostToItsQuota(t *testing.T) {
	requirePrivileges(t)
	topo := ClientServer(emu.LinkConfig{})
	topo.CPU = map[string]CPULimit{"server": LimitCPUs(0.5), "client": LimitCPUs(float64(runtime.NumCPU()))}
	tb, err := Build(topo, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	groups := []*cpuGroup{tb.Host("client").cpu, tb.Host("server").cpu}
	defer tb.Close()

	const window = 2 * time.Second
	ref := spinShare(t, tb.Host("client"), window)
	got := spinShare(t, tb.Host("server"), window)
	t.Logf("unbound loop %.3f cores; limited to 0.5: %.3f cores", ref, got)
	if ref < 0.6 {
		t.Skipf("the machine gave an unbound loop only %.2f cores: too busy to tell a 0.5 limit from its load", ref)
	}
	if got > 0.55 {
		t.Errorf("limited loop used %.3f cores, above the 0.5 quota plus one 5 ms slice per period (0.55)", got)
	}
	if low := 0.9 * min(0.5, ref); got < low {
		t.Errorf("limited loop used %.3f cores, below %.3f (0.9 of min(0.5, unbound %.3f))", got, low, ref)
	}

	// Nothing outlives the testbed: its groups are gone after Close.
	var dirs []string
	for _, g := range groups {
		dirs = append(dirs, g.v1, g.v2)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s still there after Close (%v)", d, err)
		}
	}
}
