package workload

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestLossWait checks the plan's retransmission waits against hand
// arithmetic and against a simulation of the retry process itself.
func TestLossWait(t *testing.T) {
	// 10 % loss: one packet waits T·0.1/0.8 = T/8 on average. A set-up is
	// two packets at T = 1 s: 250 ms. An exchange on a 50 ms path is two
	// packets at T = 250 ms: 62.5 ms.
	for _, c := range []struct {
		path              Path
		setups, exchanges int
		want              time.Duration
	}{
		{Path{RTT: 50 * time.Millisecond, Loss: 0.1}, 1, 0, 250 * time.Millisecond},
		{Path{RTT: 50 * time.Millisecond, Loss: 0.1}, 0, 1, 62500 * time.Microsecond},
		{Path{RTT: 50 * time.Millisecond, Loss: 0.1}, 150, 150, 150 * 312500 * time.Microsecond},
		{Path{RTT: 50 * time.Millisecond, Loss: 0}, 150, 150, 0},
		{Path{RTT: time.Second, Loss: 0.02}, 0, 0, 0},
	} {
		if got := LossWait(c.path, c.setups, c.exchanges); (got - c.want).Abs() > time.Microsecond {
			t.Errorf("LossWait(%+v, %d, %d) = %v, want %v", c.path, c.setups, c.exchanges, got, c.want)
		}
	}
	// The closed form against the process it stands for: a packet lost
	// with probability q is sent again after T, 2T, 4T, ...
	rng := rand.New(rand.NewPCG(1, 2))
	for _, q := range []float64{0.01, 0.1, 0.3} {
		const n = 200000
		var sum, sumSq float64
		for range n {
			wait, rto := 0.0, 1.0
			for rng.Float64() < q {
				wait += rto
				rto *= 2
			}
			sum += wait
			sumSq += wait * wait
		}
		mean := sum / n
		se := math.Sqrt((sumSq/n - mean*mean) / n)
		model := LossWait(Path{Loss: q}, 1, 0).Seconds() / 2 // one packet at T = 1 s
		if !(math.Abs(model-mean) <= 4*se) {
			t.Errorf("q=%v: model %.4f s per packet, simulated %.4f ± %.4f s", q, model, mean, se)
		}
	}
	// Past a loss of one half the mean has no bound; the plan caps it.
	if w := LossWait(Path{Loss: 0.9}, 1, 0); w <= 0 || w > time.Minute {
		t.Errorf("at 90 %% loss a set-up waits %v", w)
	}
}

// TestPlanOnAddsLossWaits: a closed-loop workload's plan grows on a lossy
// path by exactly its LossWait; an open-loop one's does not move.
func TestPlanOnAddsLossWaits(t *testing.T) {
	lossy := Path{RTT: 50 * time.Millisecond, Loss: 0.1}
	up := Upload{Size: 30, Count: 150, Resolve: "static", Timeout: time.Second}.Info()
	if got, want := up.PlanOn(lossy)-up.PlanOn(Path{RTT: lossy.RTT}), LossWait(lossy, 150, 150); got != want {
		t.Errorf("150 uploads at 10 %% loss: the plan grows by %v, want %v", got, want)
	}
	per := Periodic{Interval: 10 * time.Millisecond, Count: 100}.Info()
	if per.PlanOn(lossy) != per.PlanOn(Path{RTT: lossy.RTT}) {
		t.Error("an open-loop workload's plan moved with loss")
	}
}
