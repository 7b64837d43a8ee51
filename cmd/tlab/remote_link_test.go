package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
)

// egressState is what an egress may leave in the controller's namespace:
// its veths (tlx*), its nftables tables (tlab_*) and eth0's forwarding.
type egressState struct {
	veths, tables []string
	forwarding    string
	gatewayIP     net.IP
}

func (m *twoMachines) egressState(t *testing.T) egressState {
	t.Helper()
	var s egressState
	client := m.tb.Host("client")
	err := client.Do(func() error {
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, l := range links {
			if strings.HasPrefix(l.Attrs().Name, "tlx") {
				s.veths = append(s.veths, l.Attrs().Name)
				addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
				for _, a := range addrs {
					gw := append(net.IP(nil), a.IP.To4()...)
					gw[3]++
					s.gatewayIP = gw
				}
			}
		}
		b, err := os.ReadFile("/proc/sys/net/ipv4/conf/eth0/forwarding")
		s.forwarding = strings.TrimSpace(string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command("nft", "list", "tables")
	cmd.Stdout = &out
	if err := client.Run(cmd, ""); err != nil {
		t.Fatalf("nft list tables: %v", err)
	}
	for _, f := range strings.Fields(out.String()) {
		if strings.HasPrefix(f, "tlab_") {
			s.tables = append(s.tables, f)
		}
	}
	return s
}

// TestLinkInFrontOfARealPath: `tlab run --remote AGENT --link ...` runs
// the clients behind an emulated link in front of the real path (20 ms
// round trip): requests take the path's round trip plus the link's 15 ms,
// the emulator's figures are the emulated link's, the run says which part
// was real and which emulated (terminal, manifest, report), and nothing of
// the egress outlives the run, also when the run is killed (its guardian
// undoes it at once, tlab cleanup removes the rest). Nobody on the far
// side can open a connection into the egress while it runs.
func TestLinkInFrontOfARealPath(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nftables' nft is not installed (scripts/setup --tests installs it)")
	}
	bin := buildTlab(t)
	// The path's emulator sleeps: the near link's own polls a core.
	m := pathMachines(t, bin, emu.LinkConfig{Up: twoMachinesLink, Down: twoMachinesLink}, 1, "remote link test", "", t.TempDir())
	before := m.egressState(t)
	if before.forwarding != "0" || len(before.veths)+len(before.tables) > 0 {
		t.Fatalf("the controller's namespace is not fresh: %+v", before)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if keep := os.Getenv("TLAB_KEEP"); keep != "" {
		// To look at its report (docs/methodology.md's screenshots).
		defer func() { _ = os.CopyFS(filepath.Join(keep, "link-in-front"), os.DirFS(dir)) }()
	}
	args := append([]string{"run", "--protocols", "tcp,quic", "--count", "50", "--interval", "50ms", "--warmup", "0s",
		"--link", "up.delay=15ms,up.loss=2%", "--out", dir}, m.remoteArgs()...)
	stdout, stderr, err := m.controller(t, args...)
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s\nagent: %s", err, stdout, stderr, m.agentLog)
	}
	if !strings.Contains(stderr, "emulated in front of the real path, on this machine: link: {up: {delay: 15ms, loss: 2%}}") {
		t.Errorf("the run does not say what it emulated in front of the path:\n%s", stderr)
	}
	man, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if man.Remote == nil || !strings.Contains(man.Remote.Emulated, "loss: 2%") {
		t.Errorf("the manifest does not say what was emulated: %+v", man.Remote)
	}
	for p, row := range readRows(t, dir) {
		rtt, p50, release := row.Float("rtt_ms"), row.Float("delay_p50_ms"), row.Float("emu_release_p99_us")
		t.Logf("%s: rtt %.2f, p50 %.2f, the emulator's release p99 %.0f µs, %d errors", p, rtt, p50, release, row.IntOr("errors", -1))
		// The path's 20 ms and the emulated 15 ms, one after the other;
		// a busy host adds to the median what its noise measured.
		slack := tbtest.NoiseSlackMs(35, row)
		if !(rtt >= 35 && rtt <= 45) || !(p50 >= 34 && p50 <= 48+slack) {
			t.Errorf("%s: rtt %.2f ms, p50 %.2f ms; want the path's 20 ms plus the emulated 15 (p50 up to %.2f ms with the host's noise)", p, rtt, p50, 48+slack)
		}
		// The emulated link's figures are measured: the instrument's
		// error is beside the result, and the bytes it carried.
		if math.IsNaN(release) || !(row.Float("bytes_per_request") > 0) {
			t.Errorf("%s: the emulated link's figures are missing: release p99 %v, bytes %v", p, release, row.Float("bytes_per_request"))
		}
		if row.IntOr("errors", -1) != 0 {
			t.Errorf("%s: %d errors", p, row.IntOr("errors", -1))
		}
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(report, []byte("Real and emulated:")) || !bytes.Contains(report, []byte("loss: 2%")) {
		t.Errorf("the report does not say which part of the path was real and which emulated")
	}
	if after := m.egressState(t); after.forwarding != "0" || len(after.veths)+len(after.tables) > 0 {
		t.Errorf("the run left its egress behind: %+v", after)
	}

	// A second run, killed in its first cell: the far side tries to
	// open a connection to the egress, then tlab cleanup undoes it.
	dir2 := filepath.Join(t.TempDir(), "killed")
	args = append([]string{"run", "--protocols", "tcp", "--count", "400", "--interval", "50ms", "--warmup", "0s",
		"--link", "up.delay=5ms", "--out", dir2}, slicesWithout(m.remoteArgs(), "--token-file", m.tokenFile)...)
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stderr = &out
	p, err := m.tb.Host("client").Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	waitForCells(t, dir2, 1)
	during := m.egressState(t)
	if during.forwarding != "1" || len(during.veths) != 1 || len(during.tables) != 1 || during.gatewayIP == nil {
		t.Fatalf("during the run: %+v\n%s", during, out.String())
	}
	// Both knocks wait out a 1.5 s dial timeout, each on routes of its own
	// on the far machine: side by side (the group ends when both have).
	t.Run("FromTheFarSide", func(t *testing.T) {
		t.Run("NobodyFromOutsideGetsIn", func(t *testing.T) {
			t.Parallel()
			// The far machine routes the egress's subnet through the
			// controller's machine and knocks on the gateway: a refusal
			// (RST) would mean it was let in, the drop means a timeout.
			ctl, err := m.tb.Addr("server", "client")
			if err != nil {
				t.Fatal(err)
			}
			far := m.tb.Host("server")
			route := &net.IPNet{IP: during.gatewayIP.Mask(net.CIDRMask(30, 32)), Mask: net.CIDRMask(30, 32)}
			if err := far.Do(func() error { return netlink.RouteAdd(&netlink.Route{Dst: route, Gw: ctl}) }); err != nil {
				t.Fatal(err)
			}
			defer far.Do(func() error { return netlink.RouteDel(&netlink.Route{Dst: route, Gw: ctl}) })
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			c, err := far.DialContext(ctx, nil, "tcp", net.JoinHostPort(during.gatewayIP.String(), "22"))
			if err == nil {
				c.Close()
				t.Fatal("the far side opened a connection to the egress's gateway")
			}
			if !errorsIsTimeout(err) {
				t.Errorf("the far side's connection to the gateway was answered (%v), not dropped", err)
			}
		})
		t.Run("NotARouterForItsNeighbours", func(t *testing.T) {
			t.Parallel()
			// The egress turned forwarding on where the machine leaves for
			// the agent. A neighbour there (the far machine) routes a third
			// network, which the controller's machine also reaches, through
			// it: that must not be forwarded.
			ctl, err := m.tb.Addr("server", "client")
			if err != nil {
				t.Fatal(err)
			}
			listener := thirdNetwork(t, m.tb.Host("client"))
			far := m.tb.Host("server")
			route := &net.IPNet{IP: net.IPv4(10, 77, 0, 0).To4(), Mask: net.CIDRMask(24, 32)}
			if err := far.Do(func() error { return netlink.RouteAdd(&netlink.Route{Dst: route, Gw: ctl}) }); err != nil {
				t.Fatal(err)
			}
			defer far.Do(func() error { return netlink.RouteDel(&netlink.Route{Dst: route, Gw: ctl}) })
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			c, err := far.DialContext(ctx, nil, "tcp", listener)
			if err == nil {
				c.Close()
				t.Fatal("the controller's machine forwarded a neighbour's connection to a third network")
			}
			if !errorsIsTimeout(err) {
				t.Errorf("a neighbour's connection through the controller's machine: %v, want it dropped", err)
			}
		})
	})
	syscall.Kill(p.PID(), syscall.SIGKILL)
	<-p.Done()
	// The run's egress guardian, which outlives it, undoes the egress
	// at once (15 s: the guardian waits for the machine-wide egress lock,
	// and tests of other packages hold it while they build egresses on a
	// loaded machine); tlab cleanup then removes the rest.
	left := m.egressState(t)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && (len(left.tables) > 0 || left.forwarding != "0"); left = m.egressState(t) {
		time.Sleep(100 * time.Millisecond)
	}
	if len(left.tables) > 0 || left.forwarding != "0" {
		t.Errorf("15 s after the kill, the egress is still there: %+v", left)
	}
	cleanOut, cleanErr, err := m.controller(t, "cleanup")
	if err != nil {
		t.Fatalf("tlab cleanup: %v\n%s\n%s", err, cleanOut, cleanErr)
	}
	if after := m.egressState(t); after.forwarding != "0" || len(after.veths)+len(after.tables) > 0 {
		t.Errorf("tlab cleanup left the killed run's egress: %+v\n%s", after, cleanOut)
	}
}

// errorsIsTimeout says err is a dial that timed out (nothing answered).
func errorsIsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// thirdNetwork joins a network namespace of the test's own to host's by
// a veth (lan2, 10.77.0.1/24 on host's side, forwarding what comes in by
// it; .2 on the other) and returns the address of a TCP listener there.
// Everything goes with the test.
func thirdNetwork(t *testing.T, host *testbed.Host) string {
	t.Helper()
	type made struct {
		ns  netns.NsHandle
		ln  net.Listener
		err error
	}
	ch := make(chan made, 1)
	go func() {
		// Never unlocked: the thread ends in the new namespace and is
		// discarded with this goroutine.
		runtime.LockOSThread()
		ns, err := netns.New()
		if err != nil {
			ch <- made{err: err}
			return
		}
		ln, err := net.Listen("tcp", "0.0.0.0:9999")
		ch <- made{ns, ln, err}
	}()
	m := <-ch
	if m.err != nil {
		t.Fatal(m.err)
	}
	t.Cleanup(func() { m.ln.Close(); m.ns.Close() })
	go func() {
		for {
			c, err := m.ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	err := host.Do(func() error {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "lan2"}, PeerName: "lan2p", PeerNamespace: netlink.NsFd(int(m.ns))}); err != nil {
			return err
		}
		l, err := netlink.LinkByName("lan2")
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 77, 0, 1), Mask: net.CIDRMask(24, 32)}}); err != nil {
			return err
		}
		// The machine's owner forwards what comes from lan2 (Linux
		// decides by the interface a packet came in by); what comes in
		// by the interface tlab turned on must still not cross.
		if err := os.WriteFile("/proc/sys/net/ipv4/conf/lan2/forwarding", []byte("1"), 0o644); err != nil {
			return err
		}
		return netlink.LinkSetUp(l)
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(m.ns); err != nil {
			done <- err
			return
		}
		l, err := netlink.LinkByName("lan2p")
		if err == nil {
			err = netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(10, 77, 0, 2), Mask: net.CIDRMask(24, 32)}})
		}
		if err == nil {
			err = netlink.LinkSetUp(l)
		}
		if err == nil {
			err = netlink.RouteAdd(&netlink.Route{Gw: net.IPv4(10, 77, 0, 1)})
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return "10.77.0.2:9999"
}
