package calibrate

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/emu"
	"tlab/internal/testbed"
	"tlab/internal/units"
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

// oneWayErrors sends n 64-byte datagrams from client to server, one every
// interval, and returns each one's one-way delay minus want (client and
// server share the process's clock).
func oneWayErrors(client, server *testbed.Host, serverIP net.IP, n int, interval, want time.Duration) ([]time.Duration, error) {
	const port = 7002
	base := time.Now()
	arrived := make([]time.Duration, n)
	ready := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Do(func() error {
			pinAwayFromEmulator()
			fd, err := udpSocket(port, 50*time.Millisecond)
			ready <- err
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			buf := make([]byte, 2048)
			deadline := time.Now().Add(time.Duration(n)*interval + 2*time.Second)
			for got := 0; got < n && time.Now().Before(deadline); {
				m, _, err := unix.Recvfrom(fd, buf, 0)
				if err != nil || m < 8 {
					continue
				}
				if seq := binary.LittleEndian.Uint64(buf); seq < uint64(n) {
					arrived[seq] = time.Since(base)
					got++
				}
			}
			return nil
		})
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	sent := make([]time.Duration, n)
	err := client.Do(func() error {
		pinAwayFromEmulator()
		fd, err := connectedUDP(serverIP, port)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		msg := make([]byte, 64)
		for i := 0; i < n; i++ {
			for time.Since(base) < time.Duration(i)*interval {
			}
			binary.LittleEndian.PutUint64(msg, uint64(i))
			sent[i] = time.Since(base)
			if _, err := retry(func() (int, error) { return unix.Write(fd, msg) }); err != nil {
				return err
			}
		}
		return nil
	})
	if err := errors.Join(err, <-done); err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := range sent {
		if arrived[i] > 0 {
			out = append(out, arrived[i]-sent[i]-want)
		}
	}
	return out, nil
}

// BenchmarkArrivalUnderDisturbance measures what kernel receive
// timestamps buy when the host takes the emulator's CPU away: a competing
// busy process shares the emulator's core for the whole measurement
// (bounded: it is killed at the end), and the same link (10 ms each way,
// 50 Mbit/s up) is measured with arrival times from the kernel and from
// the emulator's reads. It reports, per mode, the one-way delay error of
// datagrams every millisecond (p50, p99, max), the rate the limiter let
// through against its 50 Mbit/s when offered 60 (in %), and how late the
// emulator read frames (the error that kernel timestamps correct). A third
// configuration runs the emulator's loop under SCHED_FIFO (priority 50),
// which the competitor cannot preempt:
//
//	go test ./internal/calibrate -run ^$ -bench ArrivalUnderDisturbance -benchtime 1x
func BenchmarkArrivalUnderDisturbance(b *testing.B) {
	if err := testbed.CheckPrivileges(); err != nil {
		b.Skip(err)
	}
	if runtime.NumCPU() < 2 {
		b.Skip("needs two CPUs: one for the emulator and its competitor, one for the probes")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		b.Skip("needs taskset (util-linux)")
	}
	const rate = 50e6
	delay := 10 * time.Millisecond
	cfg := emu.LinkConfig{
		Up:   emu.DirectionConfig{Delay: units.Duration(delay), Rate: units.Bitrate(rate)},
		Down: emu.DirectionConfig{Delay: units.Duration(delay)},
	}
	for _, mode := range []struct {
		name, arrival string
		rt            int
	}{{"read", emu.ArrivalRead, 0}, {"kernel", emu.ArrivalKernel, 0}, {"kernel-rt", emu.ArrivalKernel, 50}} {
		arrival := mode.name
		tb, err := testbed.Build(testbed.ClientServer(cfg), testbed.Options{Seed: 1, Emulator: emu.EngineOptions{Arrival: mode.arrival}, RealtimePriority: mode.rt})
		if err != nil {
			b.Fatal(err)
		}
		c, s := tb.Host("client"), tb.Host("server")
		ip, _ := tb.Addr("client", "server")
		// The competitor: a shell busy loop on the emulator's CPU, at the
		// same priority, for at most 30 s.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		hog := exec.CommandContext(ctx, taskset, "-c", strconv.Itoa(runtime.NumCPU()-1), "sh", "-c", "while :; do :; done")
		if err := hog.Start(); err != nil {
			cancel()
			tb.Close()
			b.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		tb.Emulator().ResetLateness()
		errs, err := oneWayErrors(c, s, ip, 3000, time.Millisecond, delay)
		var lag emu.LatencySummary
		if st, serr := tb.Emulator().Stats(); serr == nil {
			lag = st.ReadLag
		}
		// The limiter, offered 60 Mbit/s, over the middle half of 4 s.
		var rateErr float64
		if err == nil {
			done := make(chan error, 1)
			go func() { done <- udpAtRate(c, 1.2*rate, 4*time.Second) }()
			time.Sleep(time.Second)
			a, aerr := tb.Emulator().Stats()
			t0 := time.Now()
			time.Sleep(2 * time.Second)
			z, zerr := tb.Emulator().Stats()
			elapsed := time.Since(t0)
			err = errors.Join(aerr, zerr, <-done)
			up := z.Links[0].Up.Sub(a.Links[0].Up)
			rateErr = (float64(up.TxBytes)*8/elapsed.Seconds() - rate) / rate * 100
		}
		cancel()
		hog.Wait()
		tb.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(quantileUs(errs, 0.5), "owd-err-p50-us-"+arrival)
		b.ReportMetric(quantileUs(errs, 0.99), "owd-err-p99-us-"+arrival)
		b.ReportMetric(quantileUs(errs, 1), "owd-err-max-us-"+arrival)
		b.ReportMetric(rateErr, "rate-err-pct-"+arrival)
		b.ReportMetric(lag.P99, "read-lag-p99-us-"+arrival)
		b.ReportMetric(lag.Max, "read-lag-max-us-"+arrival)
	}
}
