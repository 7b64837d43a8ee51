package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/units"
)

// twoMachines is the test's stand-in for two machines: namespaces
// "client" (the controller's machine) and "server" (the agent's), joined by
// an emulated link of 10 ms each way at 50 Mbit/s, with `tlab agent`
// running in "server" as its own process.
type twoMachines struct {
	tb        *testbed.Testbed
	bin       string
	agentAddr string
	tokenFile string
	agentLog  *bytes.Buffer
	agent     *testbed.Process
	agentDir  string
	ctlState  string
}

var twoMachinesLink = emu.DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Rate: 50e6}

func newTwoMachines(t *testing.T, bin string) *twoMachines {
	t.Helper()
	tbtest.RequirePrivileges(t)
	tb, err := testbed.Build(testbed.ClientServer(emu.LinkConfig{Up: twoMachinesLink, Down: twoMachinesLink}), testbed.Options{Seed: 1, Label: "remote test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	ip, err := tb.Addr("client", "server")
	if err != nil {
		t.Fatal(err)
	}
	m := &twoMachines{tb: tb, bin: bin, agentAddr: net.JoinHostPort(ip.String(), "7447"), agentDir: t.TempDir(), ctlState: t.TempDir()}
	m.tokenFile = filepath.Join(t.TempDir(), "pairing")
	m.startAgent(t, true)
	return m
}

// startAgent starts `tlab agent` in the server namespace and waits until
// it listens.
func (m *twoMachines) startAgent(t *testing.T, token bool) {
	t.Helper()
	args := []string{"agent", "--listen", m.agentAddr, "--state", m.agentDir, "--idle", "2s"}
	if token {
		args = append(args, "--token-file", m.tokenFile)
	} else {
		args = append(args, "--no-token")
	}
	cmd := exec.Command(m.bin, args...)
	out, _ := cmd.StdoutPipe()
	m.agentLog = &bytes.Buffer{}
	cmd.Stderr = m.agentLog
	p, err := m.tb.Host("server").Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	m.agent = p
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "tlab agent listening") {
				ready <- sc.Text()
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatalf("the agent did not start: %s", m.agentLog)
	}
}

// controller runs tlab in the client namespace and returns its output.
func (m *twoMachines) controller(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(m.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := m.tb.Host("client").Run(cmd, "")
	return stdout.String(), stderr.String(), err
}

// remoteArgs are the flags of a run across the path to the agent.
func (m *twoMachines) remoteArgs() []string {
	return []string{"--remote", m.agentAddr, "--token-file", m.tokenFile, "--state", m.ctlState, "--no-calibration"}
}

func readRows(t *testing.T, dir string) map[string]results.Summary {
	t.Helper()
	r, err := results.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]results.Summary{}
	for _, row := range r.Rows {
		out[row.Protocol] = row
	}
	return out
}

// TestRemoteRunMatchesLocal: a request/response, an upload and a pub/sub
// run across the two machines' path give the delays that the same runs
// give on an emulated link of the same delay and rate (within 1.5 ms or
// 10 %); the manifest says the path was real, with the agent's identity,
// round trips and clock offset, and bytes on the wire are unmeasured
// (empty), never zero.
func TestRemoteRunMatchesLocal(t *testing.T) {
	bin := buildTlab(t)
	m := newTwoMachines(t, bin)
	runs := []struct {
		name   string
		args   []string
		metric string
	}{
		{"periodic", []string{"--protocols", "tcp,h2", "--count", "60", "--interval", "25ms", "--warmup", "0s"}, "delay_p50_ms"},
		{"upload", []string{"--workload", "upload", "--protocols", "h1s", "--count", "15", "--set", "workload.resolve=dns"}, "e2e_p50_ms"},
		{"pubsub", []string{"--workload", "pubsub", "--protocols", "mqtt-tcp,mqtt-quic", "--set", "workload.messages=10", "--set", "workload.pattern=reconnect", "--set", "settings.zero_rtt=true"}, "reconnect_p50_ms"},
	}
	remoteRows := map[string]map[string]results.Summary{}
	for i, r := range runs {
		dir := filepath.Join(t.TempDir(), r.name)
		args := append(append([]string{"run"}, r.args...), append(m.remoteArgs(), "--out", dir)...)
		if i > 0 {
			args = slicesWithout(args, "--token-file", m.tokenFile) // paired by the first run
		}
		stdout, stderr, err := m.controller(t, args...)
		if err != nil {
			t.Fatalf("%s across the path: %v\n%s\n%s\nagent: %s", r.name, err, stdout, stderr, m.agentLog)
		}
		if !strings.Contains(stderr, "across the real path to agent "+m.agentAddr) {
			t.Errorf("%s: the run does not say it crosses a real path:\n%s", r.name, stderr)
		}
		man, err := results.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if man.Remote == nil || man.Remote.Address != m.agentAddr || len(man.Remote.Checks) != 2 {
			t.Fatalf("%s: manifest remote %+v", r.name, man.Remote)
		}
		for _, c := range man.Remote.Checks {
			// The path's round trip is the link's 20 ms; both ends share
			// this machine's clock, so the offset is within its stated
			// uncertainty (and a scheduling slack of 1 ms).
			if c.RTTMinMs < 20 || c.RTTMinMs > 30 || math.Abs(c.OffsetMs) > c.UncertaintyMs+1 || c.AgentNoise.WindowS <= 0 {
				t.Errorf("%s: path check %+v", r.name, c)
			}
		}
		remoteRows[r.name] = readRows(t, dir)
		for p, row := range remoteRows[r.name] {
			if row.Profile != "remote" || row.Float("rtt_ms") < 20 {
				t.Errorf("%s %s: profile %s, rtt %v", r.name, p, row.Profile, row.Float("rtt_ms"))
			}
			for _, k := range []string{"bytes_per_request", "wire_bytes_per_message", "emu_release_p99_us"} {
				if v, ok := row.Get(k); ok && v != nil {
					t.Errorf("%s %s: %s = %v across a real path, want empty (not measured)", r.name, p, k, v)
				}
			}
		}
	}
	// The agent ran nothing after the runs: its servers' ports are free.
	for _, port := range []int{4433, 1883, 14567} {
		if l, err := m.tb.Host("server").Listen("tcp", fmt.Sprintf(":%d", port)); err != nil {
			t.Errorf("port %d on the agent's machine is still taken: %v", port, err)
		} else {
			l.Close()
		}
	}
	// The same runs on an emulated link of the same delay and rate, with
	// the two machines' testbed gone.
	m.agent.Stop()
	m.tb.Close()
	for _, r := range runs {
		dir := filepath.Join(t.TempDir(), r.name+"-local")
		args := append(append([]string{"run"}, r.args...), "--profile", "ethernet", "--link", "rtt=20ms,rate=50Mbit", "--no-calibration", "--out", dir)
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s locally: %v\n%s", r.name, err, out)
		}
		for p, local := range readRows(t, dir) {
			rem := remoteRows[r.name][p]
			a, b := rem.Float(r.metric), local.Float(r.metric)
			t.Logf("%s %s %s: remote %.2f ms, local %.2f ms", r.name, p, r.metric, a, b)
			if !(math.Abs(a-b) <= math.Max(1.5, 0.1*b)) {
				t.Errorf("%s %s: %s %.2f ms across the path, %.2f ms on the emulated link", r.name, p, r.metric, a, b)
			}
		}
	}
}

func slicesWithout(args []string, drop ...string) []string {
	var out []string
	for _, a := range args {
		keep := true
		for _, d := range drop {
			keep = keep && a != d
		}
		if keep {
			out = append(out, a)
		}
	}
	return out
}

// TestRemoteRunSurvivesKills: the controller killed mid-run leaves
// nothing running on the agent (its session ends after the idle time) and
// --resume finishes the run; the agent killed mid-run fails the cell that
// was running, and once it is back (no new pairing: it remembers its
// controller) --resume finishes the run.
func TestRemoteRunSurvivesKills(t *testing.T) {
	bin := buildTlab(t)
	m := newTwoMachines(t, bin)
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"run", "--protocols", "tcp,h1s,quic", "--count", "80", "--interval", "25ms", "--warmup", "0s", "--out", dir}, m.remoteArgs()...)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	p, err := m.tb.Host("client").Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	waitForCells(t, dir, 1)
	syscall.Kill(p.PID(), syscall.SIGKILL)
	<-p.Done()
	// The agent notices the silence and stops the controller's server.
	time.Sleep(3 * time.Second)
	if l, err := m.tb.Host("server").Listen("tcp", ":4433"); err != nil {
		t.Fatalf("the killed controller's server still runs on the agent: %v\nagent: %s", err, m.agentLog)
	} else {
		l.Close()
	}
	if !strings.Contains(m.agentLog.String(), "nothing of it runs") {
		t.Errorf("the agent's log does not say the session ended:\n%s", m.agentLog)
	}
	// Resume: the controller knows the agent now, no token needed.
	stdout, errOut, err := m.controller(t, "run", "--resume", dir, "--no-calibration", "--state", m.ctlState)
	if err != nil {
		t.Fatalf("resume after killing the controller: %v\n%s\n%s", err, stdout, errOut)
	}
	if rows := readRows(t, dir); len(rows) != 3 {
		t.Fatalf("%d rows after the resume", len(rows))
	}

	// The agent killed in the middle of a second run.
	dir2 := filepath.Join(t.TempDir(), "run2")
	args = append([]string{"run", "--protocols", "tcp,h2", "--count", "80", "--interval", "25ms", "--warmup", "0s", "--out", dir2}, slicesWithout(m.remoteArgs(), "--token-file", m.tokenFile)...)
	cmd = exec.Command(bin, args...)
	var out2 bytes.Buffer
	cmd.Stderr = &out2
	p, err = m.tb.Host("client").Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	waitForCells(t, dir2, 1)
	m.agent.Stop()
	<-p.Done()
	if p.Err() == nil {
		t.Errorf("the run went on as if the agent were there:\n%s", out2.String())
	}
	m.startAgent(t, false) // no token: it remembers its controller
	stdout, errOut, err = m.controller(t, "run", "--resume", dir2, "--no-calibration", "--state", m.ctlState)
	if err != nil {
		t.Fatalf("resume after killing the agent: %v\n%s\n%s\nagent: %s", err, stdout, errOut, m.agentLog)
	}
	rows := readRows(t, dir2)
	if len(rows) != 2 {
		t.Fatalf("%d rows after the resume", len(rows))
	}
	for p, r := range rows {
		if r.Int("errors") != 0 || r.Int("requests") != 80 {
			t.Errorf("%s after the resume: %d requests, %d errors", p, r.Int("requests"), r.Int("errors"))
		}
	}
}

// waitForCells waits until n cells of the run in dir have started.
func waitForCells(t *testing.T, dir string, n int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(dir, "cells", "*", "records.csv")); len(m) >= n {
			time.Sleep(500 * time.Millisecond)
			return
		}
	}
	t.Fatalf("no cell started in %s", dir)
}
