package testbed

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"tlab/internal/emu"
)

// spinServerRequest is what the test's server child is asked: listen on
// Port and answer "pong", while Spinners goroutines burn CPU (a server
// under load).
type spinServerRequest struct {
	Port     int `json:"port"`
	Spinners int `json:"spinners"`
}

// spinServer is the test binary's serve function for its server
// children (TestMain).
func spinServer(line []byte) (io.Closer, error) {
	var r spinServerRequest
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(r.Port))
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "pong %d\n", os.Getpid())
			c.Close()
		}
	}()
	for range r.Spinners {
		go func() {
			for x := 0; ; x++ {
				_ = x * x
			}
		}()
	}
	return ln, nil
}

// TestServerProcessIsHeldByItsHostsCPULimit: a server child of a host
// limited to 0.5 CPU listens in the host (the client reaches it at the
// host's address, which no other network has) and, with two goroutines
// spinning, gets at most half a core: 0.55 with one 5 ms CFS bandwidth
// slice per 100 ms period (kernel.sched_cfs_bandwidth_slice_us), and at
// least 0.3, so that a child born outside the group (which the group's
// cpu.stat does not count) fails. Its group gets the weight of a nice
// -20 task, as spinShare's, so the machine's other load cannot hold it
// below its quota. After Close the child is gone.
func TestServerProcessIsHeldByItsHostsCPULimit(t *testing.T) {
	requirePrivileges(t)
	topo := ClientServer(emu.LinkConfig{})
	topo.CPU = map[string]CPULimit{"server": LimitCPUs(0.5)}
	tb, err := Build(topo, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	server := tb.Host("server")
	if !server.CPULimited() || tb.Host("client").CPULimited() {
		t.Fatal("CPULimited: want the server limited and the client not")
	}
	g := server.cpu
	if g.v1 != "" {
		if err := os.WriteFile(g.v1+"/cpu.shares", []byte("88761"), 0); err != nil {
			t.Fatal(err)
		}
	} else if err := os.WriteFile(g.v2+"/cpu.weight", []byte("8668"), 0); err != nil {
		t.Fatal(err)
	}

	const port = 4433
	srv, err := server.StartServerProcess(spinServerRequest{Port: port, Spinners: runtime.NumCPU()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := tb.Addr("client", "server")
	if err != nil {
		t.Fatal(err)
	}
	var c net.Conn
	err = tb.Host("client").Do(func() (err error) {
		c, err = net.DialTimeout("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)), 5*time.Second)
		return
	})
	if err != nil {
		t.Fatalf("the client cannot reach the server child in its host: %v", err)
	}
	var pid int
	if _, err := fmt.Fscanf(c, "pong %d\n", &pid); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if pid == os.Getpid() {
		t.Fatal("the server answered from tlab's own process")
	}

	time.Sleep(200 * time.Millisecond)
	u0, err := server.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(2 * time.Second)
	u1, err := server.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	got := float64(u1-u0) / float64(time.Since(t0))
	t.Logf("server child with %d spinners, limited to 0.5: %.3f cores", runtime.NumCPU(), got)
	if got > 0.55 {
		t.Errorf("server child used %.3f cores, above the 0.5 quota plus one slice per period (0.55)", got)
	}
	if got < 0.3 {
		t.Errorf("server child's group counted %.3f cores: the child is not in the host's cgroup", got)
	}

	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("server child %d still runs after Close", pid)
	}
}
