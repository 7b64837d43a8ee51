package experiment

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tlab/internal/cluster"
)

// roundTaskEnv marks this test binary, run by a Slurm array task, as a
// round's task (TestSlurmRoundTask) rather than the test suite.
const roundTaskEnv = "TLAB_TEST_SLURM_ROUND_TASK"

// TestSlurmRoundTask is the task a Slurm array runs in
// TestARealSlurmRunsTwoRoundsAsArrays: this test binary, asked to run
// only this test, with `explore --round DIR --shard auto/N` after the
// flags, as the tlab binary gets them. Its cells are flipAttempt's (no
// network), so that the test proves the cluster's part, not the lab's.
func TestSlurmRoundTask(t *testing.T) {
	if os.Getenv(roundTaskEnv) == "" {
		t.Skip("run by a Slurm array task of TestARealSlurmRunsTwoRoundsAsArrays")
	}
	args := flag.Args()
	if len(args) != 5 || args[0] != "explore" || args[1] != "--round" || args[3] != "--shard" {
		t.Fatalf("task arguments %q; want explore --round DIR --shard auto/N", args)
	}
	s, err := ShardFromEnv(args[4], os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := ParseShard(s)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	task := RoundTask{Dir: args[2], Shard: sh, NoCalibration: true, Quality: "off", attempt: flipAttempt(&calls)}
	if err := task.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("shard %s ran %d cells", s, calls)
}

// A real Slurm (Debian's slurmctld, slurmd and munged, started here on
// one node, in a network namespace of the test's own with only loopback)
// runs a two-round exploration: each round an sbatch array of 2 tasks,
// the controller merging them and deciding the next round. The rounds
// are those TestDispatchedRoundsGiveTheMapOfOneMachine checks in process
// (12 cells, then 6), and the map is one machine's.
func TestARealSlurmRunsTwoRoundsAsArrays(t *testing.T) {
	if os.Getenv(roundTaskEnv) != "" {
		t.Skip("inside a task")
	}
	sl := startSlurm(t)
	file := filepath.Join(t.TempDir(), "e.yaml")
	if err := os.WriteFile(file, []byte(fakeRounds), 0o644); err != nil {
		t.Fatal(err)
	}
	localCalls := 0
	local, err := Exploration{NameOrFile: file, Out: filepath.Join(t.TempDir(), "local"), NoCalibration: true, NoWhy: true, NoReport: true,
		attempt: flipAttempt(&localCalls)}.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runner := &recordingRounds{RoundRunner: SlurmRounds{Sbatch: sl.sbatch, Env: append(os.Environ(), roundTaskEnv+"=1", "SLURM_CONF="+sl.conf),
		Spec: cluster.Spec{Name: "tlab-test", Shards: 2, CPUs: 1, Memory: "64Mi",
			Program: []string{exe, "-test.run=^TestSlurmRoundTask$", "-test.timeout=2m", "-test.v"}}}}
	dir := filepath.Join(sl.dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	got, err := Exploration{NameOrFile: file, Out: dir, NoCalibration: true, NoWhy: true, NoReport: true, Rounds: runner,
		attempt: refuseCells(t)}.Execute(ctx)
	if err != nil {
		sl.dump(t)
		t.Fatal(err)
	}
	t.Logf("two rounds through Slurm in %v", time.Since(start).Round(time.Millisecond))
	checkTwoRounds(t, dir, got.Map, runner.rounds)
	for _, r := range runner.rounds {
		// The array's own output: each task ran its share.
		outs, _ := filepath.Glob(filepath.Join(r.Dir, "slurm-*_*.out"))
		if len(outs) != 2 {
			t.Errorf("round %d: %d Slurm task outputs %q; want 2 (an array of 2)", r.Index, len(outs), outs)
		}
		for _, o := range outs {
			b, _ := os.ReadFile(o)
			if !strings.Contains(string(b), fmt.Sprintf("ran %d cells", r.Cells/2)) {
				t.Errorf("%s: %s; want the task's %d cells", o, b, r.Cells/2)
			}
		}
	}
	for _, f := range []string{"explore-points.csv", "explore-verdicts.csv", "explore-boundaries.csv"} {
		a, _ := os.ReadFile(filepath.Join(local.Dir, f))
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between one machine and Slurm:\n%s\n---\n%s", f, a, b)
		}
	}
}

// recordingRounds remembers the rounds it ran.
type recordingRounds struct {
	RoundRunner
	rounds []Round
}

func (r *recordingRounds) RunRound(ctx context.Context, round Round) error {
	r.rounds = append(r.rounds, round)
	return r.RoundRunner.RunRound(ctx, round)
}

// slurmNode is a one-node Slurm cluster of the test's own.
type slurmNode struct {
	dir, conf, sbatch string
	logs              []string
}

func (s *slurmNode) dump(t *testing.T) {
	for _, l := range s.logs {
		b, _ := os.ReadFile(l)
		t.Logf("%s:\n%s", l, b)
	}
}

// startSlurm starts munged, slurmctld and slurmd (Debian's slurm-wlm and
// munge, which scripts/setup --tests installs) with their configuration, key,
// state and logs in a temporary directory, inside a network namespace
// made for the test (only its loopback: the daemons' ports are on it),
// and stops them and removes the namespace when the test ends, also when
// it fails. sbatch is a script that enters the namespace.
func startSlurm(t *testing.T) *slurmNode {
	t.Helper()
	var missing []string
	for _, b := range []string{"munged", "slurmctld", "slurmd", "sbatch", "sinfo", "ip", "nsenter"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		t.Skipf("needs Debian's slurm-wlm and munge (scripts/setup --tests installs them): %s not found", strings.Join(missing, ", "))
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the daemons run as root, in a network namespace of the test's own")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// A directory every user may traverse (munged checks its socket's path).
	dir, err := os.MkdirTemp("", "tlab-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("tlab-slurm-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns).Run() })
	// A second loopback address: getaddrinfo's AI_ADDRCONFIG, which the
	// daemons ask for, counts no IPv4 address but 127.0.0.1 as configured.
	for _, a := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", "127.0.0.2/8", "dev", "lo"}} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, a...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(a, " "), err, out)
		}
	}
	// nsenter enters the namespace's network only (ip netns exec would
	// also mount a sysfs of its own, without the cgroups slurmd reads).
	inNS := func(name string, args ...string) *exec.Cmd {
		return exec.Command("nsenter", append([]string{"--net=/run/netns/" + ns, name}, args...)...)
	}
	s := &slurmNode{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	key := make([]byte, 1024)
	for i := range key {
		key[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"state", "spool"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Ports free on the host's loopback are free in the namespace's too.
	ctldPort, slurmdPort := freePort(t), freePort(t)
	conf := fmt.Sprintf(`ClusterName=tlabtest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[4]s/munge.sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[4]s/state
SlurmdSpoolDir=%[4]s/spool
SlurmctldPidFile=%[4]s/slurmctld.pid
SlurmdPidFile=%[4]s/slurmd.pid
SlurmctldLogFile=%[4]s/slurmctld.log
SlurmdLogFile=%[4]s/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=tlabnode NodeAddr=127.0.0.1 CPUs=2 RealMemory=256 State=UNKNOWN
PartitionName=tlab Nodes=tlabnode Default=YES MaxTime=INFINITE State=UP
`, host, ctldPort, slurmdPort, dir)
	if err := os.WriteFile(s.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SLURM_CONF="+s.conf)
	start := func(name string, args ...string) {
		log := filepath.Join(dir, name+".out")
		s.logs = append(s.logs, log)
		f, err := os.Create(log)
		if err != nil {
			t.Fatal(err)
		}
		cmd := inNS(name, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, f, f
		if err := cmd.Start(); err != nil {
			f.Close()
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			f.Close()
		})
	}
	// Started in this order, stopped in the reverse (t.Cleanup).
	start("munged", "-F", "-f", "--socket="+dir+"/munge.sock", "--key-file="+dir+"/munge.key", "--pid-file="+dir+"/munged.pid",
		"--log-file="+dir+"/munged.log", "--seed-file="+dir+"/munged.seed")
	waitFor(t, s, "munged's socket", func() bool { _, err := os.Stat(dir + "/munge.sock"); return err == nil })
	start("slurmctld", "-D", "-i")
	start("slurmd", "-D", "-N", "tlabnode")
	s.logs = append(s.logs, dir+"/slurmctld.log", dir+"/slurmd.log")
	s.sbatch = filepath.Join(dir, "sbatch")
	script := fmt.Sprintf("#!/bin/sh\nexec nsenter --net=/run/netns/%s sbatch \"$@\"\n", ns)
	if err := os.WriteFile(s.sbatch, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s, "the node idle", func() bool {
		cmd := inNS("sinfo", "-h", "-o", "%t")
		cmd.Env = env
		out, _ := cmd.Output()
		return strings.TrimSpace(string(out)) == "idle"
	})
	return s
}

func waitFor(t *testing.T, s *slurmNode, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return
		}
	}
	s.dump(t)
	t.Fatalf("waited 30 s for %s", what)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, p, _ := net.SplitHostPort(l.Addr().String())
	n, _ := strconv.Atoi(p)
	return n
}
