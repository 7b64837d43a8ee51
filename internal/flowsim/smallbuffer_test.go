package flowsim

import (
	"testing"
	"time"
)

// TestFastAutotuningLeadsTheSmallBufferByOneRoundTripAtMost: in the
// small-buffer scenario both growing allowances end at the 16 KiB stream
// bound, autotuning one round trip after fast autotuning (by hand,
// TestStudyRuleHoldsTheFirstTwoUpdates: each stream's window after its
// updates 1..4 is 4, 4, 8, 16 KiB against 4, 4, 16, 16 KiB, and a stream
// updates once per round trip). From then on both obey the same rule on
// the same window, so fast autotuning's lead is the credit of that one
// round trip: a transfer ends at most one RTT sooner, never later, and
// the gain, one RTT over the transfer's time, shrinks as the data grow.
// That is why the study's +7 % can be any figure from 0 to tens of
// percent by the data size, which the study does not give (docs/flowsim.md).
func TestFastAutotuningLeadsTheSmallBufferByOneRoundTripAtMost(t *testing.T) {
	base := Scenarios()["small-buffer"][0]
	rtt := base.RTT().Seconds()
	for _, size := range []int64{16 * kib, 64 * kib, 120 * kib, 512 * kib, 1 * mib} {
		cfg := base
		cfg.BytesPerStream = size
		auto, err := Run(cfg, Autotuning{})
		if err != nil {
			t.Fatal(err)
		}
		fast, err := Run(cfg, FastAutotuning{})
		if err != nil {
			t.Fatal(err)
		}
		lead := auto.CompletionS - fast.CompletionS
		t.Logf("%d KiB per stream: autotuning %.3f s, fast %.3f s, lead %.3f s (%+.1f %%)", size/kib, auto.CompletionS, fast.CompletionS, lead, (auto.CompletionS/fast.CompletionS-1)*100)
		// 1 ms: the simulator's event times are not whole round trips.
		if lead < -time.Millisecond.Seconds() || lead > rtt+time.Millisecond.Seconds() {
			t.Errorf("%d KiB per stream: fast autotuning leads by %.3f s, want 0 to one RTT (%.3f s)", size/kib, lead, rtt)
		}
	}
}
