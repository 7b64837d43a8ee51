package testbed

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CPULimit caps the CPU time of the processes a host starts: Quota of
// CPU time in every Period, the kernel's CFS bandwidth control (cgroup v2
// cpu.max, or cpu.cfs_quota_us and cpu.cfs_period_us where the cpu
// controller is still on a cgroup v1 hierarchy). A quota of half the
// period is half a core; equal to it, one vCPU (a 1-vCPU cloud task).
type CPULimit struct {
	Quota  time.Duration `yaml:"quota" json:"quota"`
	Period time.Duration `yaml:"period" json:"period"`
}

// DefaultCPUPeriod is the kernel's own default CFS period (100 ms).
const DefaultCPUPeriod = 100 * time.Millisecond

// CPUs returns the limit as a number of cores.
func (l CPULimit) CPUs() float64 { return float64(l.Quota) / float64(l.Period) }

// LimitCPUs is a limit of cpus cores over the default period.
func LimitCPUs(cpus float64) CPULimit {
	return CPULimit{Quota: time.Duration(cpus * float64(DefaultCPUPeriod)), Period: DefaultCPUPeriod}
}

// Validate checks the limit against the kernel's bounds: a period of 1 ms
// to 1 s and a quota of at least 1 ms (kernel/sched/core.c).
func (l CPULimit) Validate() error {
	if l.Period < time.Millisecond || l.Period > time.Second {
		return fmt.Errorf("cpu period %v: want 1ms to 1s", l.Period)
	}
	if l.Quota < time.Millisecond {
		return fmt.Errorf("cpu quota %v: want at least 1ms (%.3f CPUs at period %v is below it)", l.Quota, l.CPUs(), l.Period)
	}
	return nil
}

// cpuGroup is one host's cgroup, made for one run and removed by the
// testbed's Close. A process the host starts is born inside it: through
// CLONE_INTO_CGROUP in the cgroup v2 hierarchy, and, where the cpu
// controller is on a v1 hierarchy, because the locked thread that forks
// it joined the v1 group first (a child starts in its parent thread's
// cgroups). Neither moves tlab itself.
type cpuGroup struct {
	// v2 is the group in the unified hierarchy ("" without one): it
	// holds the limit when the cpu controller is there and always
	// accounts the CPU time (cpu.stat's usage_usec).
	v2   string
	v2fd *os.File
	// v1 is the group in the v1 cpu hierarchy, when the limit is there.
	v1 string
}

// cgroupMounts finds the cgroup v2 mount and the v1 mount that carries
// the cpu controller, from /proc/self/mountinfo.
func cgroupMounts() (v2, v1cpu string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 {
			continue
		}
		switch qf[0] {
		case "cgroup2":
			if v2 == "" {
				v2 = pf[4]
			}
		case "cgroup":
			for _, o := range strings.Split(qf[2], ",") {
				if o == "cpu" && v1cpu == "" {
					v1cpu = pf[4]
				}
			}
		}
	}
	return v2, v1cpu, sc.Err()
}

// newCPUGroup makes the cgroup named name with limit l.
func newCPUGroup(name string, l CPULimit) (g *cpuGroup, err error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	v2root, v1root, err := cgroupMounts()
	if err != nil {
		return nil, fmt.Errorf("finding the cgroup mounts: %w", err)
	}
	g = &cpuGroup{}
	defer func() {
		if err != nil {
			g.remove()
			g = nil
		}
	}()
	quota, period := l.Quota.Microseconds(), l.Period.Microseconds()
	v2cpu := false
	if v2root != "" {
		ctl, err := os.ReadFile(filepath.Join(v2root, "cgroup.controllers"))
		v2cpu = err == nil && hasWord(string(ctl), "cpu")
		if v2cpu {
			// The root escapes the rule that a group with processes
			// cannot hand controllers to its children, so the run's
			// groups sit directly under it.
			sub, _ := os.ReadFile(filepath.Join(v2root, "cgroup.subtree_control"))
			if !hasWord(string(sub), "cpu") {
				if err := os.WriteFile(filepath.Join(v2root, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
					return g, fmt.Errorf("enabling the cpu controller under %s: %w", v2root, err)
				}
			}
		}
		g.v2 = filepath.Join(v2root, name)
		if err := os.Mkdir(g.v2, 0o755); err != nil {
			g.v2 = ""
			return g, fmt.Errorf("making cgroup %s: %w", name, err)
		}
		if g.v2fd, err = os.Open(g.v2); err != nil {
			return g, fmt.Errorf("opening cgroup %s: %w", g.v2, err)
		}
		if v2cpu {
			if err := os.WriteFile(filepath.Join(g.v2, "cpu.max"), fmt.Appendf(nil, "%d %d", quota, period), 0); err != nil {
				return g, fmt.Errorf("writing %s/cpu.max: %w", g.v2, err)
			}
			return g, nil
		}
	}
	if v1root == "" {
		return g, errors.New("no cgroup cpu controller on this machine (neither cgroup v2 nor a v1 cpu hierarchy has it)")
	}
	g.v1 = filepath.Join(v1root, name)
	if err := os.Mkdir(g.v1, 0o755); err != nil {
		g.v1 = ""
		return g, fmt.Errorf("making cgroup %s in %s: %w", name, v1root, err)
	}
	// The period first: the quota is checked against it.
	if err := os.WriteFile(filepath.Join(g.v1, "cpu.cfs_period_us"), []byte(strconv.FormatInt(period, 10)), 0); err != nil {
		return g, fmt.Errorf("writing %s/cpu.cfs_period_us: %w", g.v1, err)
	}
	if err := os.WriteFile(filepath.Join(g.v1, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(quota, 10)), 0); err != nil {
		return g, fmt.Errorf("writing %s/cpu.cfs_quota_us: %w", g.v1, err)
	}
	return g, nil
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// prepare makes cmd start inside the group. It must be called, and the
// command started, on a locked OS thread that is never given back to
// other goroutines (Host.Start's and Host.Do's are): that thread joins
// the v1 group.
func (g *cpuGroup) prepare(cmd *exec.Cmd) error {
	if g.v2fd != nil {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(g.v2fd.Fd())
	}
	if g.v1 != "" {
		tid := strconv.Itoa(unix.Gettid())
		if err := os.WriteFile(filepath.Join(g.v1, "tasks"), []byte(tid), 0); err != nil {
			return fmt.Errorf("joining cgroup %s: %w", g.v1, err)
		}
	}
	return nil
}

// usage is the CPU time the group's processes have used, from the v2
// group's cpu.stat (usage_usec).
func (g *cpuGroup) usage() (time.Duration, error) {
	if g.v2 == "" {
		return 0, errors.New("no cgroup v2 hierarchy to account CPU time")
	}
	b, err := os.ReadFile(filepath.Join(g.v2, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s/cpu.stat: %w", g.v2, err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", g.v2)
}

// remove kills what is left in the group (never tlab: its threads that
// forked the host's processes go back to the root group) and removes it.
// The host's processes have been stopped by then; a thread that forked
// one may still be ending, so the removal is retried for a while.
func (g *cpuGroup) remove() error {
	var errs []error
	if g.v2fd != nil {
		g.v2fd.Close()
		g.v2fd = nil
	}
	if g.v2 != "" {
		// cgroup.kill (Linux 5.14) ends every process in the group;
		// without it the processes are killed one by one.
		if os.WriteFile(filepath.Join(g.v2, "cgroup.kill"), []byte("1"), 0) != nil {
			killListed(filepath.Join(g.v2, "cgroup.procs"))
		}
		if err := rmdirWhenEmpty(g.v2); err != nil {
			errs = append(errs, err)
		}
		g.v2 = ""
	}
	if g.v1 != "" {
		root := filepath.Dir(g.v1)
		deadline := time.Now().Add(2 * time.Second)
		for {
			moveOwnThreads(filepath.Join(g.v1, "tasks"), filepath.Join(root, "tasks"))
			killListed(filepath.Join(g.v1, "cgroup.procs"))
			err := os.Remove(g.v1)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", g.v1, err))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		g.v1 = ""
	}
	return errors.Join(errs...)
}

func rmdirWhenEmpty(dir string) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killListed sends SIGKILL to every process a cgroup.procs file lists,
// except tlab itself.
func killListed(procs string) {
	b, err := os.ReadFile(procs)
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != self && pid > 0 {
			unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// moveOwnThreads moves tlab's threads listed in a v1 tasks file to the
// hierarchy's root.
func moveOwnThreads(tasks, rootTasks string) {
	b, err := os.ReadFile(tasks)
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, f := range strings.Fields(string(b)) {
		tid, err := strconv.Atoi(f)
		if err != nil {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", self, tid)); err == nil {
			os.WriteFile(rootTasks, []byte(f), 0)
		}
	}
}

// runGroupName is the prefix of a run's cgroups: tlab-RUN-HOST.
func runGroupName(runID, host string) string { return "tlab-" + runID + "-" + host }

var runIDPattern = regexp.MustCompile(`^[0-9A-Za-z-]+$`)

// leftoverCPUGroups lists the cgroups a run made that are still there (a
// run killed before its Close), in both hierarchies.
func leftoverCPUGroups(runID string) []string {
	if !runIDPattern.MatchString(runID) {
		return nil
	}
	v2, v1, err := cgroupMounts()
	if err != nil {
		return nil
	}
	var out []string
	for _, root := range []string{v2, v1} {
		if root == "" {
			continue
		}
		dirs, _ := filepath.Glob(filepath.Join(root, runGroupName(runID, "*")))
		out = append(out, dirs...)
	}
	return out
}

// removeLeftoverGroup ends what is left in a killed run's cgroup and
// removes it.
func removeLeftoverGroup(dir string) error {
	if os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0) != nil {
		killListed(filepath.Join(dir, "cgroup.procs"))
	}
	return rmdirWhenEmpty(dir)
}
