package experiment

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/emu"
	"tlab/internal/metrics"
	"tlab/internal/pki"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// bareEcho measures n request/response exchanges of size bytes each way
// over a TCP connection written directly with system calls on locked
// threads, paced every interval like the periodic workload: the floor that
// tlab's own per-request machinery is compared with.
func bareEcho(b *testing.B, tb *testbed.Testbed, n, size int, interval time.Duration) []float64 {
	ip, _ := tb.Addr("client", "server")
	ln, err := tb.Host("server").ListenWith(&net.ListenConfig{}, "tcp4", ":7100")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		raw, _ := c.(*net.TCPConn).SyscallConn()
		raw.Control(func(fd uintptr) {
			runtime.LockOSThread()
			unix.SetNonblock(int(fd), false)
			buf := make([]byte, size)
			for {
				if !readFull(int(fd), buf) {
					return
				}
				if _, err := unix.Write(int(fd), buf); err != nil {
					return
				}
			}
		})
	}()
	var delays []float64
	err = tb.Host("client").Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		sa := &unix.SockaddrInet4{Port: 7100}
		copy(sa.Addr[:], ip.To4())
		if err := unix.Connect(fd, sa); err != nil {
			return err
		}
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		buf := make([]byte, size)
		var start unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &start)
		for i := 0; i < n; i++ {
			due := unix.NsecToTimespec(start.Nano() + int64(i)*interval.Nanoseconds())
			unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &due, nil)
			binary.BigEndian.PutUint32(buf, uint32(i))
			t0 := time.Now()
			if _, err := unix.Write(fd, buf); err != nil {
				return err
			}
			if !readFull(fd, buf) {
				return unix.EIO
			}
			delays = append(delays, float64(time.Since(t0).Nanoseconds())/1e6)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return delays
}

func readFull(fd int, buf []byte) bool {
	for got := 0; got < len(buf); {
		n, err := unix.Read(fd, buf[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return false
		}
		got += n
	}
	return true
}

// plainGoEcho measures the same exchanges with a plain loop over a Go
// net.Conn against tlab's tcp server: no workload, no framing code of the
// client. The gap between it and bareEcho is Go's netpoller, which every Go
// stack that tlab runs pays alike.
func plainGoEcho(b *testing.B, tb *testbed.Testbed, addr string, n, size int, interval time.Duration) []float64 {
	conn, err := tb.Host("client").DialContext(context.Background(), nil, "tcp4", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	req := make([]byte, 8+size)
	binary.BigEndian.PutUint32(req[0:4], uint32(size))
	binary.BigEndian.PutUint32(req[4:8], uint32(size))
	resp := make([]byte, 4+size)
	var delays []float64
	next := time.Now()
	for i := 0; i < n; i++ {
		next = next.Add(interval)
		for time.Until(next) > 0 {
			time.Sleep(time.Until(next))
		}
		t0 := time.Now()
		conn.Write(req)
		for got := 0; got < len(resp); {
			k, err := conn.Read(resp[got:])
			if err != nil {
				b.Fatal(err)
			}
			got += k
		}
		delays = append(delays, float64(time.Since(t0).Nanoseconds())/1e6)
	}
	return delays
}

// BenchmarkTCPOverhead compares tlab's tcp protocol under the periodic
// workload with a bare echo on system calls and with a plain Go loop,
// through the same zero-delay emulated link, in interleaved blocks so that
// the machine's drift hits all three alike:
//
//	go test ./internal/experiment -run ^$ -bench TCPOverhead -benchtime 3000x
func BenchmarkTCPOverhead(b *testing.B) {
	if err := testbed.CheckPrivileges(); err != nil {
		b.Skip(err)
	}
	const size, interval, blocks = 256, 2 * time.Millisecond, 5
	n := max(b.N/blocks, 50)
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{}), testbed.Options{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	ip, _ := tb.Addr("client", "server")
	s := proto.DefaultSettings()
	s.Certs, _ = pki.NewCertificates(ip)
	stack, _ := proto.Lookup("tcp")
	p, _ := proto.As[proto.Exchanger](stack)
	srv, err := p.Serve(tb.Host("server"), 7101, s)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	addr := ip.String() + ":7101"
	c, err := p.NewClient(context.Background(), tb.Host("client"), addr, s)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var bare, plain, tlab []float64
	b.ResetTimer()
	for k := 0; k < blocks; k++ {
		bare = append(bare, bareEcho(b, tb, n, size, interval)...)
		plain = append(plain, plainGoEcho(b, tb, addr, n, size, interval)...)
		w := workload.Periodic{Interval: interval, ReqSize: size, RespSize: size, Count: n}
		if err := w.Drive(context.Background(), c, func(r results.Record) {
			if r.OK() {
				tlab = append(tlab, r.DelayMs)
			}
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	for _, s := range [][]float64{bare, plain, tlab} {
		slices.Sort(s)
	}
	q := func(s []float64, p float64) float64 { return metrics.Quantile(s, p) * 1000 }
	b.ReportMetric(q(bare, 0.5), "bare-p50-us")
	b.ReportMetric(q(plain, 0.5), "plain-go-p50-us")
	b.ReportMetric(q(tlab, 0.5), "tlab-p50-us")
	b.ReportMetric(q(tlab, 0.5)-q(bare, 0.5), "overhead-p50-us")
	b.ReportMetric(q(tlab, 0.5)-q(plain, 0.5), "tlab-own-p50-us")
}
