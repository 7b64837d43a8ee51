package proto

import (
	"os"
	"os/exec"
	"syscall"
)

// Isolated is a command started by StartIsolated.
type Isolated struct {
	Cmd  *exec.Cmd
	Done <-chan struct{}
	stop func() error
}

// StartIsolated starts cmd in host h as the first process of a PID
// namespace of its own, as cred when it is set: when the command ends
// (stopped, or killed with tlab by the host's Pdeathsig, even by SIGKILL)
// the kernel kills every process it left in that namespace, a server's
// workers, a shell's background jobs. It is also its own process group
// unless it reads a terminal (an interactive shell must stay in the
// terminal's foreground group, tlab's own), so that Stop asks all of it
// to end first. Cmd.ProcessState says how it ended once Done is closed.
func StartIsolated(h ProcessHost, cmd *exec.Cmd, cred *syscall.Credential) (*Isolated, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !readsTerminal(cmd), Credential: cred, Cloneflags: syscall.CLONE_NEWPID}
	stop, done, err := h.StartProcess(cmd)
	if err != nil {
		return nil, err
	}
	return &Isolated{Cmd: cmd, Done: done, stop: stop}, nil
}

// Stop ends the command and what it started: SIGTERM to its group, then
// the host's stop (SIGTERM, and SIGKILL after two seconds: the first
// process of a PID namespace ignores signals it has no handler for, and
// its end ends the namespace).
func (p *Isolated) Stop() error {
	select {
	case <-p.Done:
		return nil
	default:
	}
	if p.Cmd.SysProcAttr.Setpgid {
		syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGTERM)
	}
	return p.stop()
}

func readsTerminal(cmd *exec.Cmd) bool {
	f, ok := cmd.Stdin.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
