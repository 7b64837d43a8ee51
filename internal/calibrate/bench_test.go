package calibrate

import (
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/testbed"
)

// BenchmarkEmulatedPingPong reports the RTT of 64-byte UDP ping-pong through
// a zero-delay emulated link and over a bare veth pair, and the one-way
// latency the emulator adds (tlab calibrate's first check, as a benchmark):
//
//	go test ./internal/calibrate -run ^$ -bench PingPong -benchtime 20000x
func BenchmarkEmulatedPingPong(b *testing.B) {
	if err := testbed.CheckPrivileges(); err != nil {
		b.Skip(err)
	}
	measure := func(direct bool) []time.Duration {
		var rtts []time.Duration
		err := withTestbed(Options{}, emu.LinkConfig{}, direct, func(tb *testbed.Testbed, c, s *testbed.Host) (err error) {
			ip, _ := tb.Addr("client", "server")
			rtts, err = pingPong(c, s, ip, b.N, 200)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		return rtts
	}
	direct := measure(true)
	b.ResetTimer()
	emulated := measure(false)
	b.StopTimer()
	b.ReportMetric(quantileUs(emulated, 0.5), "rtt-p50-us")
	b.ReportMetric(quantileUs(direct, 0.5), "direct-rtt-p50-us")
	b.ReportMetric((quantileUs(emulated, 0.5)-quantileUs(direct, 0.5))/2, "added-p50-us")
	b.ReportMetric((quantileUs(emulated, 0.99)-quantileUs(direct, 0.99))/2, "added-p99-us")
}
