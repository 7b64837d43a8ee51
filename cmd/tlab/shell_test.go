package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tlab/internal/experiment"
	"tlab/internal/testbed/tbtest"
)

// realTool returns the path of a real client the tests check tlab with
// (scripts/setup --tests installs it from Debian), failing on CI where it must be
// and skipping elsewhere.
func realTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing on CI: scripts/setup --tests installs it", name)
		}
		t.Skipf("%s is not installed (scripts/setup --tests installs it)", name)
	}
	return p
}

// shell runs tlab shell with args and returns its account (from --out's
// shell.json), its standard output and error.
func shell(t *testing.T, bin string, args ...string) (*experiment.ShellAccount, string, string) {
	t.Helper()
	out := t.TempDir()
	i := len(args)
	for k, a := range args {
		if a == "--" {
			i = k
			break
		}
	}
	full := append(append(append([]string{"shell", "--out", out}, args[:i]...), "--as-root"), args[i:]...)
	cmd := exec.Command(bin, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errorsAs(err, &ee) {
		t.Fatalf("tlab shell: %v\n%s", err, stderr.String())
	}
	b, rerr := os.ReadFile(filepath.Join(out, experiment.ShellFile))
	if rerr != nil {
		t.Fatalf("no account: %v\nstderr:\n%s", rerr, stderr.String())
	}
	var acct experiment.ShellAccount
	if err := json.Unmarshal(b, &acct); err != nil {
		t.Fatal(err)
	}
	return &acct, stdout.String(), stderr.String()
}

// irttStats is what the tests read of irtt's JSON output (times in ns).
type irttStats struct {
	Stats struct {
		RTT          struct{ Median, N float64 } `json:"rtt"`
		SendDelay    struct{ Median float64 }    `json:"send_delay"`
		ReceiveDelay struct{ Median float64 }    `json:"receive_delay"`
		IPDVSend     struct{ Mean, N float64 }   `json:"ipdv_send"`
		IPDVReceive  struct{ Mean float64 }      `json:"ipdv_receive"`
		UpLoss       float64                     `json:"upstream_loss_percent"`
		DownLoss     float64                     `json:"downstream_loss_percent"`
		PacketsSent  float64                     `json:"packets_sent"`
	} `json:"stats"`
}

// TestIrttThroughTheShellAgreesWithTheLink: irtt, a client and server
// nobody here wrote, measures through `tlab shell` a link of 10 ms up and
// 15 ms down, normal jitter of 2 ms up, 2 % loss up. Both ends share this
// machine's clock, so irtt's one-way delays are exact: each direction's
// median is its configured delay, the round trip their sum, irtt's mean
// IPDV up is the mean absolute difference of two normal draws (2σ/√π,
// 2.26 ms) and none down, and the loss falls where a binomial of 2 % over
// irtt's packets puts it (99 %).
func TestIrttThroughTheShellAgreesWithTheLink(t *testing.T) {
	tbtest.RequirePrivileges(t)
	irtt := realTool(t, "irtt")
	bin := buildTlab(t)
	res := filepath.Join(t.TempDir(), "irtt.json")
	acct, _, stderr := shell(t, bin, "--link", "up.delay=10ms,down.delay=15ms,up.jitter=2ms,up.jitter_dist=normal,up.loss=2%", "--seed", "3",
		"--server", irtt+" server -b :2112", "--",
		"sh", "-c", irtt+` client -i 10ms -d 8s -Q --wait=500ms -o `+res+` "$TLAB_SERVER"`)
	if acct.ExitStatus != 0 {
		t.Fatalf("irtt client exited %d\n%s", acct.ExitStatus, stderr)
	}
	var r irttStats
	b, err := os.ReadFile(res)
	if err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("irtt's output: %v\n%s", err, stderr)
	}
	s := r.Stats
	ms := func(ns float64) float64 { return ns / 1e6 }
	t.Logf("irtt: rtt median %.2f ms, send %.2f, receive %.2f, ipdv send %.2f receive %.2f, loss up %.2f %% down %.2f %% of %.0f; emulator release p99 %.1f us",
		ms(s.RTT.Median), ms(s.SendDelay.Median), ms(s.ReceiveDelay.Median), ms(s.IPDVSend.Mean), ms(s.IPDVReceive.Mean), s.UpLoss, s.DownLoss, s.PacketsSent, acct.Release.P99)
	// The emulator's own error (release lateness, the host's wake-ups)
	// adds to every figure; 0.5 ms covers it on a busy day.
	slack := 0.5 + acct.Release.P99/1000
	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"send delay median", ms(s.SendDelay.Median), 10, slack + 0.3}, // the median of the jittered delay (held in order)
		{"receive delay median", ms(s.ReceiveDelay.Median), 15, slack},
		{"rtt median", ms(s.RTT.Median), 25, 2 * slack},
		{"ipdv up (mean |Δd|)", ms(s.IPDVSend.Mean), 2 * 2 / math.Sqrt(math.Pi), 0.2*2.26 + slack},
		{"ipdv down", ms(s.IPDVReceive.Mean), 0, slack},
	} {
		if !(math.Abs(c.got-c.want) <= c.tol) {
			t.Errorf("%s %.3f ms, want %.3f ± %.3f", c.name, c.got, c.want, c.tol)
		}
	}
	n := s.PacketsSent
	sd := 100 * math.Sqrt(0.02*0.98/n)
	if lo, hi := 2-2.58*sd, 2+2.58*sd; s.UpLoss < lo || s.UpLoss > hi {
		t.Errorf("upstream loss %.2f %%, want 2 %% (99 %%: %.2f to %.2f)", s.UpLoss, lo, hi)
	}
	if s.DownLoss != 0 {
		t.Errorf("downstream loss %.2f %% on a lossless direction", s.DownLoss)
	}
	// tlab's own account agrees with irtt's: the up direction dropped
	// what irtt lost upstream.
	up := acct.Links[0].Up
	if lost := up.Drops["loss"]; !(math.Abs(float64(lost)-s.UpLoss/100*n) <= 3) {
		t.Errorf("tlab counted %d losses up, irtt %.0f", lost, s.UpLoss/100*n)
	}
}

// TestIperf3ThroughTheShellGetsTheRate: iperf3 over TCP and UDP through
// `tlab shell` on a 20 Mbit/s link: TCP's goodput is the rate less the
// headers (at least 85 % of it, never above), and UDP offered 10 Mbit/s
// loses nothing and delivers it.
func TestIperf3ThroughTheShellGetsTheRate(t *testing.T) {
	tbtest.RequirePrivileges(t)
	iperf3 := realTool(t, "iperf3")
	bin := buildTlab(t)
	var out struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			Sum struct {
				BitsPerSecond float64 `json:"bits_per_second"`
				LostPercent   float64 `json:"lost_percent"`
			} `json:"sum"`
		} `json:"end"`
	}
	for _, c := range []struct {
		name string
		args string
	}{{"tcp", "-t 4"}, {"udp", "-u -b 10M -t 4"}} {
		acct, stdout, stderr := shell(t, bin, "--link", "rate=20Mbit,delay=5ms", "--server", iperf3+" -s -1", "--",
			"sh", "-c", iperf3+` -c "$TLAB_SERVER" -J `+c.args)
		if acct.ExitStatus != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
			t.Fatalf("%s: iperf3 exited %d\n%s\n%s", c.name, acct.ExitStatus, stdout, stderr)
		}
		switch c.name {
		case "tcp":
			got := out.End.SumReceived.BitsPerSecond / 1e6
			t.Logf("tcp: %.2f Mbit/s through 20 Mbit/s", got)
			if got < 17 || got > 20 {
				t.Errorf("tcp goodput %.2f Mbit/s through a 20 Mbit/s link", got)
			}
		case "udp":
			got := out.End.Sum.BitsPerSecond / 1e6
			t.Logf("udp: %.2f Mbit/s offered 10, lost %.2f %%", got, out.End.Sum.LostPercent)
			if !(math.Abs(got-10) <= 0.5) || out.End.Sum.LostPercent > 0.5 {
				t.Errorf("udp: %.2f Mbit/s, %.2f %% lost, for 10 Mbit/s offered under a 20 Mbit/s rate", got, out.End.Sum.LostPercent)
			}
		}
	}
}

// TestIperf3ThroughATraceGetsItsMean: through a mahimahi rate trace that
// alternates 24 and 12 Mbit/s every half second (a mean of 18 Mbit/s: 1500
// delivery opportunities of 1500 bytes a second) with a 100-packet
// buffer, iperf3's TCP goodput is the trace's mean less the headers
// (1448 of every 1514 bytes on the wire): at least 85 % of that, and never
// above the mean.
func TestIperf3ThroughATraceGetsItsMean(t *testing.T) {
	tbtest.RequirePrivileges(t)
	iperf3 := realTool(t, "iperf3")
	bin := buildTlab(t)
	var trace strings.Builder
	for ms := 1; ms <= 1000; ms++ {
		n := 1
		if ms <= 500 {
			n = 2
		}
		for range n {
			fmt.Fprintln(&trace, ms)
		}
	}
	file := filepath.Join(t.TempDir(), "alternating.trace")
	os.WriteFile(file, []byte(trace.String()), 0o644)
	const mean = 1500 * 1500 * 8 / 1e6 // Mbit/s
	acct, stdout, stderr := shell(t, bin, "--link", "delay=5ms,up.rate=0,up.queue_packets=100,up.trace="+file, "--server", iperf3+" -s -1", "--",
		"sh", "-c", iperf3+` -c "$TLAB_SERVER" -J -t 6`)
	var out struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if acct.ExitStatus != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
		t.Fatalf("iperf3 exited %d\n%s\n%s", acct.ExitStatus, stdout, stderr)
	}
	got := out.End.SumReceived.BitsPerSecond / 1e6
	t.Logf("tcp through the trace: %.2f Mbit/s, its mean %.1f", got, mean)
	if payload := mean * 1448 / 1514; got < 0.85*payload || got > mean {
		t.Errorf("tcp goodput %.2f Mbit/s through a trace of mean %.1f Mbit/s", got, mean)
	}
}

// TestShellInteractiveInTmux drives an interactive shell as a person
// would, in tmux: the prompt says where it is, the server's address is in
// the environment, a ping crosses the emulated 20 ms, and exiting prints
// the account.
func TestShellInteractiveInTmux(t *testing.T) {
	tbtest.RequirePrivileges(t)
	tmux := realTool(t, "tmux")
	realTool(t, "ping")
	bin := buildTlab(t)
	session := "tlab-shell-test"
	exec.Command(tmux, "kill-session", "-t", session).Run()
	t.Cleanup(func() { exec.Command(tmux, "kill-session", "-t", session).Run() })
	// The pane stays when tlab exits, so that its last words can be read.
	start := exec.Command(tmux, "new-session", "-d", "-s", session, "-x", "200", "-y", "50", "sleep 1; env SHELL=/bin/bash "+bin+" shell --link delay=10ms --as-root")
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	exec.Command(tmux, "set-option", "-t", session, "remain-on-exit", "on").Run()
	screen := func() string {
		out, _ := exec.Command(tmux, "capture-pane", "-p", "-t", session, "-S", "-100").Output()
		return string(out)
	}
	waitFor := func(what string, d time.Duration) string {
		t.Helper()
		var s string
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if s = screen(); strings.Contains(s, what) {
				return s
			}
		}
		t.Fatalf("the screen never showed %q:\n%s", what, s)
		return s
	}
	waitFor("[tlab ethernet]", 30*time.Second)
	keys := func(k string) { exec.Command(tmux, "send-keys", "-t", session, k, "Enter").Run() }
	keys(`ping -c 3 -i 0.2 "$TLAB_SERVER"`)
	s := waitFor("3 received", 15*time.Second)
	if !strings.Contains(s, "time=20") && !strings.Contains(s, "time=21") {
		t.Errorf("ping's round trips are not the emulated 20 ms:\n%s", s)
	}
	keys("exit 7")
	s = waitFor("the shell exited 7", 15*time.Second)
	if !strings.Contains(s, "LINK") || !strings.Contains(s, "release error") {
		t.Errorf("no account after the shell:\n%s", s)
	}
}

// TestShellLeavesNothingBehind: a shell interrupted (SIGINT) stops its
// command and server, prints its account and exits 130; a shell killed
// (SIGKILL) leaves no process running (its commands die with it), and
// what is left of it, its record and temp directory, tlab cleanup removes
// as for a killed run.
func TestShellLeavesNothingBehind(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	// Each command is a shell that waits for a child: both carry the
	// marker (the shell in its script, the child in its odd duration).
	marker := "997.25"
	script := "sleep " + marker + "; : " + marker
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		cmd := exec.Command(bin, "shell", "--as-root", "--server", script, "--", "sh", "-c", script)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Both commands run.
		deadline := time.Now().Add(20 * time.Second)
		for markerProcesses(marker) < 4 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if n := markerProcesses(marker); n < 4 {
			cmd.Process.Kill()
			t.Fatalf("%d of the shell's four processes (two shells, two sleeps) started\n%s", n, stderr.String())
		}
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		for deadline := time.Now().Add(10 * time.Second); markerProcesses(marker) > 0 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		if n := markerProcesses(marker); n > 0 {
			t.Errorf("after %v: %d of the shell's processes still run", sig, n)
		}
		if sig == syscall.SIGINT {
			var ee *exec.ExitError
			if !errorsAs(err, &ee) || ee.ExitCode() != exitCanceled || !strings.Contains(stderr.String(), "LINK") {
				t.Errorf("after SIGINT: %v, want exit %d with the account:\n%s", err, exitCanceled, stderr.String())
			}
		}
	}
	// The killed shell's record and temp directory are what tlab cleanup
	// is for (as a killed run's); after it, nothing is left.
	if out, err := exec.Command(bin, "cleanup").CombinedOutput(); err != nil {
		t.Errorf("tlab cleanup: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "cleanup", "--dry-run").CombinedOutput(); err != nil || !strings.Contains(string(out), "Nothing to clean up") {
		t.Errorf("tlab cleanup --dry-run after cleanup: %v\n%s", err, out)
	}
}

// markerProcesses counts the processes whose command line holds marker.
func markerProcesses(marker string) int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) && !bytes.Contains(b, []byte("shell\x00--as-root")) {
			n++
		}
	}
	return n
}

// TestIrttAsACommandStackAgreesWithUDP runs the guide's worked example as
// a user would: irtt, given as commands in a scenario, beside tlab's own
// udp stack at the same interval and sizes on the same seeded 5G link.
// Both complete their messages, and the verdict compares their delays
// with an interval: the difference of medians lies within ±0.5 ms (what
// two clients' timestamping may differ by on a quiet host), its interval
// too, widened by the host's wake-up p99 the two cells measured (a client
// woken late reads a later arrival; beside a CPU hog tlab's udp client's
// median was 0.68 ms above irtt's, and at load 4 irtt's 0.43 above udp's).
func TestIrttAsACommandStackAgreesWithUDP(t *testing.T) {
	tbtest.RequirePrivileges(t)
	realTool(t, "irtt")
	bin := buildTlab(t)
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(bin, "run", "../../docs/examples/irtt-beside-udp.yaml", "--set", "duration=6s", "--out", out, "--no-calibration", "--quality", "off", "--no-report", "--allow-commands")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tlab run: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	rows := readRows(t, out)
	for _, p := range []string{"udp", "irtt"} {
		r, ok := rows[p]
		if !ok {
			t.Fatalf("no row for %s", p)
		}
		if why := r.Label("cell_error"); why != "" {
			t.Errorf("%s: cell_error %s", p, why)
		}
		if n := r.Float("requests"); n < 550 {
			t.Errorf("%s: %v requests, want the 600 of 6 s at 10 ms", p, n)
		}
		t.Logf("%s: %v requests, p50 %.3f ms, p99 %.3f ms, errors %v", p, r.Float("requests"), r.Float("delay_p50_ms"), r.Float("delay_p99_ms"), r.Float("errors"))
	}
	b, err := os.ReadFile(filepath.Join(out, "comparisons.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []map[string]any
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cs {
		if c["metric"] != "delay_ms" {
			continue
		}
		found = true
		diff, lo, hi := c["median_diff"].(float64), c["median_diff_ci_low"].(float64), c["median_diff_ci_high"].(float64)
		t.Logf("%s against %s: median difference %.3f ms (95 %%: %.3f to %.3f), verdict %v", c["b"], c["a"], diff, lo, hi, c["verdict"])
		// Each client's median moves by its own late wake-ups: the host's
		// wake-up p99 (the larger of the two cells') bounds that shift;
		// the emulator's release error is the same link's for both.
		tol := 0.5 + max(rows["udp"].Float("host_wakeup_p99_us"), rows["irtt"].Float("host_wakeup_p99_us"), 0)/1000
		t.Logf("tolerance ±%.2f ms", tol)
		if lo < -tol || hi > tol {
			t.Errorf("irtt and tlab's udp differ: %.3f ms (%.3f to %.3f), want within ±%.2f ms (0.5 and the host's noise)", diff, lo, hi, tol)
		}
	}
	if !found {
		t.Errorf("no delay comparison between udp and irtt in comparisons.json")
	}
	for _, f := range []string{"commands/events.json", "client.log"} {
		if _, err := os.Stat(filepath.Join(out, "cells", rows["irtt"].Cell, f)); err != nil {
			t.Errorf("irtt's cell lacks %s: %v", f, err)
		}
	}
}

// TestFailingCommandStacksFailTheirCellsOnly: a stack whose client exits
// with an error, one whose client reports nothing and one whose client
// hangs (stopped past twice the cell's plan and 10 s) each fail their own
// cell with the tail of the client's standard error, which stays in the
// cell's client.log and off the terminal; the built-in stack's cell beside
// them runs, and the run exits 1 (cells that completed nothing).
func TestFailingCommandStacksFailTheirCellsOnly(t *testing.T) {
	tbtest.RequirePrivileges(t)
	bin := buildTlab(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "broken.yaml")
	os.WriteFile(file, []byte(`name: broken
profiles: [ethernet]
protocols: [tcp, broken, silent, stuck]
workload: {type: periodic, interval: 10ms}
count: 20
warmup: 0s
stacks:
  broken:
    client: 'echo "cannot reach {server}: no route" >&2; exit 3'
  silent:
    server: sleep 30
    client: echo "all went well, I think" >&2
  stuck:
    client: echo "waiting for a peer" >&2; sleep 600
`), 0o644)
	out := filepath.Join(dir, "run")
	cmd := exec.Command(bin, "run", file, "--out", out, "--no-calibration", "--quality", "off", "--no-report", "--allow-commands")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != exitFailure {
		t.Fatalf("tlab run: %v, want exit %d\n%s", err, exitFailure, stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), "no route") && !strings.Contains(stderr.String(), "failed") {
		t.Error("a command's own output reached the terminal")
	}
	rows := readRows(t, out)
	if n := rows["tcp"].Float("requests"); n != 20 {
		t.Errorf("the built-in stack beside them: %v requests", n)
	}
	for p, want := range map[string]string{"broken": "exit status 3", "silent": "wrote no events", "stuck": "did not end within"} {
		why := rows[p].Label("cell_error")
		if !strings.Contains(why, want) || !strings.Contains(why, "standard error ends") {
			t.Errorf("%s: cell_error %q, want %q and the tail of its standard error", p, why, want)
		}
		if b, err := os.ReadFile(filepath.Join(out, "cells", rows[p].Cell, "client.log")); err != nil || len(b) == 0 {
			t.Errorf("%s: its client.log: %v", p, err)
		}
	}
}

// TestShellTakesAScenarioAndCaptures: the network comes from a scenario
// file (its profile and link override), and --capture keeps a pcap per
// host interface beside the account.
func TestShellTakesAScenarioAndCaptures(t *testing.T) {
	tbtest.RequirePrivileges(t)
	realTool(t, "ping")
	bin := buildTlab(t)
	file := filepath.Join(t.TempDir(), "net.yaml")
	os.WriteFile(file, []byte("name: net\nprofiles: [5g]\nprotocols: [tcp]\nworkload: {type: periodic}\ncount: 1\nlink: {up: {loss: 0%}}\n"), 0o644)
	out := t.TempDir()
	cmd := exec.Command(bin, "shell", "--scenario", file, "--out", out, "--capture", "--as-root", "--", "sh", "-c", `ping -c 3 -i 0.2 "$TLAB_SERVER"`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tlab shell: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, experiment.ShellFile))
	var acct experiment.ShellAccount
	if err != nil || json.Unmarshal(b, &acct) != nil || acct.Network != "5g" {
		t.Fatalf("account: %v %s", err, b)
	}
	if up := acct.Links[0].Up; up.Packets < 3 {
		t.Errorf("the link saw %d packets up for 3 pings", up.Packets)
	}
	pcaps, _ := filepath.Glob(filepath.Join(out, "captures", "*.pcap"))
	if len(pcaps) < 2 {
		t.Fatalf("captures: %v, want a pcap per host interface", pcaps)
	}
	for _, p := range pcaps {
		if st, err := os.Stat(p); err != nil || st.Size() <= 24 {
			t.Errorf("%s is empty", p)
		}
	}
}
