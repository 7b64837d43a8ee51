package testbed

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

const egressChildEnv = "TLAB_TEST_EGRESS_CHILD"

// egressChild builds a testbed that reaches the address in the
// environment through an egress, from the namespace it was started in
// (the test's "controller machine", never the real one), says READY and
// waits to be killed.
func egressChild(reach string) {
	tb, err := Build(ClientServer(delayLoss(time.Millisecond, 0)), Options{Reach: []net.IP{net.ParseIP(reach)}})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	if err := tb.Egress("client"); err != nil {
		fmt.Println("ERR", strings.ReplaceAll(err.Error(), "\n", " "))
		tb.Close()
		os.Exit(1)
	}
	// The egress works: a datagram from the testbed's other host to the
	// echo server at reach comes back (through both translations and the
	// guards' allow rule).
	err = tb.Host("server").Do(func() error {
		c, err := net.Dial("udp4", net.JoinHostPort(reach, "7"))
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 64)
		for i := 0; i < 10; i++ {
			c.Write([]byte("ping"))
			c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err = c.Read(buf); err == nil {
				return nil
			}
		}
		return fmt.Errorf("no echo from %s through the egress: %w", reach, err)
	})
	if err != nil {
		fmt.Println("ERR", err)
		tb.Close()
		os.Exit(1)
	}
	fmt.Println("READY", tb.ID)
	time.Sleep(2 * time.Minute)
	tb.Close()
	os.Exit(2)
}

// udpThirdNetwork joins a namespace of the test's own to host by a veth
// (lan2: 10.77.0.1/24 on host's side, whose owner forwards what comes in
// by it; .2 on the other, with a default route back) and counts the
// datagrams that reach 10.77.0.2:9999 there.
func udpThirdNetwork(t *testing.T, host *Host) *atomic.Int64 {
	t.Helper()
	type made struct {
		ns  netns.NsHandle
		pc  net.PacketConn
		err error
	}
	ch := make(chan made, 1)
	go func() {
		// Never unlocked: the thread ends in the new namespace.
		runtime.LockOSThread()
		ns, err := netns.New()
		if err != nil {
			ch <- made{err: err}
			return
		}
		pc, err := net.ListenPacket("udp4", "0.0.0.0:9999")
		ch <- made{ns, pc, err}
	}()
	m := <-ch
	if m.err != nil {
		t.Fatal(m.err)
	}
	t.Cleanup(func() { m.pc.Close(); m.ns.Close() })
	var got atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := m.pc.ReadFrom(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	err := host.Do(func() error {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "lan2"}, PeerName: "lan2p", PeerNamespace: netlink.NsFd(int(m.ns))}); err != nil {
			return err
		}
		if err := setUpAddr("lan2", net.IPv4(10, 77, 0, 1), net.CIDRMask(24, 32)); err != nil {
			return err
		}
		return writeSysctl("net/ipv4/conf/lan2/forwarding", "1")
	})
	if err != nil {
		t.Fatal(err)
	}
	err = inNamespace(m.ns, func() error {
		if err := setUpAddr("lan2p", net.IPv4(10, 77, 0, 2), net.CIDRMask(24, 32)); err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{Gw: net.IPv4(10, 77, 0, 1)})
	})
	if err != nil {
		t.Fatal(err)
	}
	return &got
}

// TestEgressNeverRoutesForNeighbours: while a run's egress lives, and
// after the run is killed -9, a neighbour that routes a third network
// through the machine gets none of its datagrams across, also once
// something flushed the nftables ruleset (a firewall reload); the live
// run puts its table back; tlab cleanup then undoes everything. The
// "machine" is a namespace of the test's own: every flush happens there.
func TestEgressNeverRoutesForNeighbours(t *testing.T) {
	requirePrivileges(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nftables' nft is not installed")
	}
	machines := build(t, ClientServer(delayLoss(time.Millisecond, 0)), Options{})
	ctl, neighbour := machines.Host("client"), machines.Host("server")
	ctlIP, err := machines.Addr("server", "client")
	if err != nil {
		t.Fatal(err)
	}
	farIP, err := machines.Addr("client", "server")
	if err != nil {
		t.Fatal(err)
	}
	received := udpThirdNetwork(t, ctl)
	echo, err := neighbour.ListenPacket("udp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go udpEcho(echo)
	third := &net.IPNet{IP: net.IPv4(10, 77, 0, 0).To4(), Mask: net.CIDRMask(24, 32)}
	if err := neighbour.Do(func() error { return netlink.RouteAdd(&netlink.Route{Dst: third, Gw: ctlIP}) }); err != nil {
		t.Fatal(err)
	}
	// crossed sends 20 datagrams from the neighbour to the third network
	// and says how many arrived.
	crossed := func() int64 {
		t.Helper()
		before := received.Load()
		pc, err := neighbour.ListenPacket("udp4", ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		for i := 0; i < 20; i++ {
			pc.WriteTo([]byte("neighbour"), &net.UDPAddr{IP: net.IPv4(10, 77, 0, 2), Port: 9999})
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		return received.Load() - before
	}
	nft := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		cmd := exec.Command("nft", args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := ctl.Run(cmd, ""); err != nil {
			t.Fatalf("nft %v in the test's namespace: %v: %s", args, err, out.String())
		}
		return out.String()
	}
	forwarding := func() string {
		var v string
		ctl.Do(func() (err error) { v, err = readSysctl("net/ipv4/conf/eth0/forwarding"); return err })
		return v
	}

	// startRun starts a run with an egress in the machine's namespace
	// and returns it and its id.
	startRun := func() (*exec.Cmd, *Process, string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), egressChildEnv+"="+farIP.String())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		p, err := ctl.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Stop() })
		line, _ := bufio.NewReader(out).ReadString('\n')
		var id string
		if _, err := fmt.Sscanf(line, "READY %s", &id); err != nil {
			t.Fatalf("egress child: %q", line)
		}
		return cmd, p, id
	}
	cmd, p, id := startRun()
	if forwarding() != "1" || !strings.Contains(nft("list", "tables"), "tlab_") {
		t.Fatalf("the egress did not turn forwarding on behind its table: forwarding %q, tables %q", forwarding(), nft("list", "tables"))
	}
	if n := crossed(); n != 0 {
		t.Errorf("live egress: %d of 20 of a neighbour's datagrams crossed", n)
	}
	nft("flush", "ruleset")
	if n := crossed(); n != 0 {
		t.Errorf("live egress, ruleset flushed: %d of 20 of a neighbour's datagrams crossed", n)
	}
	restored := false
	for deadline := time.Now().Add(5 * egressWatchInterval); time.Now().Before(deadline) && !restored; time.Sleep(100 * time.Millisecond) {
		restored = strings.Contains(nft("list", "tables"), "tlab_")
	}
	if !restored {
		t.Errorf("the live run did not put its table back after the flush")
	}

	// Killed with its guardian (as a cgroup's kill would): forwarding
	// stays on behind the guards until tlab cleanup.
	// The guardian first, or it would undo the egress between the two.
	syscall.Kill(guardianOf(t, id), syscall.SIGKILL)
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	<-p.Done()
	nft("flush", "ruleset")
	if forwarding() != "1" {
		t.Fatalf("after the kill, forwarding is %q; the test wants the state a kill leaves", forwarding())
	}
	if n := crossed(); n != 0 {
		t.Errorf("killed run, ruleset flushed: %d of 20 of a neighbour's datagrams crossed", n)
	}

	var actions []CleanupAction
	if err := ctl.Do(func() (err error) { actions, err = Cleanup(false); return err }); err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		if a.Run == id && a.Error != "" {
			t.Errorf("cleanup: %s: %s", a.What, a.Error)
		}
	}
	if rules := guardRulesOf(t, ctl); len(rules) > 0 {
		t.Errorf("cleanup left guard rules: %v", rules)
	}
	if forwarding() != "0" {
		t.Errorf("cleanup left forwarding %q on eth0", forwarding())
	}
	// Killed alone: its guardian undoes the egress at once, no cleanup
	// needed (15 s: it waits for the machine-wide egress lock, which
	// other tests' egresses hold while they are built).
	cmd, p, _ = startRun()
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	<-p.Done()
	undone := false
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !undone; time.Sleep(100 * time.Millisecond) {
		undone = forwarding() == "0" && !strings.Contains(nft("list", "tables"), "tlab_") && len(guardRulesOf(t, ctl)) == 0
	}
	if !undone {
		t.Errorf("a run killed alone left its egress: forwarding %q, tables %q, guards %v", forwarding(), nft("list", "tables"), guardRulesOf(t, ctl))
	}

	// The harness can see a crossing: the machine's owner turns
	// forwarding on, and the neighbour's datagrams get through.
	ctl.Do(func() error { return writeSysctl("net/ipv4/conf/eth0/forwarding", "1") })
	if n := crossed(); n == 0 {
		t.Errorf("with forwarding on and nothing of tlab's left, none of the neighbour's datagrams crossed: the test sees nothing")
	}
}

// guardRulesOf lists the routing rules in the guards' priorities in h's
// namespace.
func guardRulesOf(t *testing.T, h *Host) []netlink.Rule {
	t.Helper()
	var rules, out []netlink.Rule
	if err := h.Do(func() (err error) { rules, err = netlink.RuleList(netlink.FAMILY_V4); return err }); err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		if r.Priority >= guardAllowPriority && r.Priority <= guardBlockLast {
			out = append(out, r)
		}
	}
	return out
}

// guardianOf finds the PID of the guardian of run id's egress.
func guardianOf(t *testing.T, id string) int {
	t.Helper()
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range envs {
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		for _, v := range strings.Split(string(b), "\x00") {
			if strings.HasPrefix(v, guardianEnv+"=") && strings.HasSuffix(v, "/"+id+".json") {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
				return pid
			}
		}
	}
	t.Fatalf("no guardian for run %s", id)
	return 0
}
