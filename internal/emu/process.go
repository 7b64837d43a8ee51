package emu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Process is a running emulator engine, seen from its parent.
type Process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr lockedBuffer
	mu     sync.Mutex
	done   chan error
	closed bool
	// live are the changes Set made (LiveEvents).
	live []LinkEvent
}

// Start launches the engine as a child of this process and hands it the
// port sockets (one file per port, in the order of spec's links and ports).
// The child is bound to a dedicated OS thread that lives as long as it does,
// so that its parent-death signal fires only when tlab itself dies.
func Start(spec EngineSpec, ports []*os.File) (*Process, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	if spec.Ports() != len(ports) {
		return nil, fmt.Errorf("emulator: the spec names %d ports, %d sockets were given", spec.Ports(), len(ports))
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("emulator: locating own executable: %w", err)
	}
	p := &Process{done: make(chan error, 1)}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.ExtraFiles = ports
	cmd.Stderr = &p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.stdout = bufio.NewReader(out)
	p.cmd = cmd

	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread must outlive the child (Pdeathsig is
		// tied to the thread that forked it) and then ends with this
		// goroutine.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("emulator: start: %w", err)
	}
	line, err := json.Marshal(spec)
	if err != nil {
		p.Close()
		return nil, err
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		p.Close()
		return nil, fmt.Errorf("emulator: sending spec: %w", err)
	}
	var ready struct {
		Ready bool `json:"ready"`
	}
	if err := p.readReply(&ready, 10*time.Second); err != nil || !ready.Ready {
		p.Close()
		return nil, fmt.Errorf("emulator did not start: %v %s", err, p.stderr.String())
	}
	return p, nil
}

// readReply reads one JSON line from the child, or fails after timeout.
func (p *Process) readReply(v any, timeout time.Duration) error {
	type result struct {
		line []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := p.stdout.ReadBytes('\n')
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("emulator: %w (%s)", r.err, p.stderr.String())
		}
		return json.Unmarshal(r.line, v)
	case <-time.After(timeout):
		return errors.New("emulator: no answer within " + timeout.String())
	}
}

func (p *Process) request(op string, v any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("emulator: already stopped")
	}
	if _, err := fmt.Fprintf(p.stdin, "{\"op\":%q}\n", op); err != nil {
		return fmt.Errorf("emulator: %s: %w", op, err)
	}
	return p.readReply(v, 5*time.Second)
}

// PID is the engine process's id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stats returns the engine's counters now.
func (p *Process) Stats() (EngineStats, error) {
	var s EngineStats
	err := p.request("stats", &s)
	return s, err
}

// ResetLateness clears the release-lateness histogram, so that a
// measurement can exclude its own set-up.
func (p *Process) ResetLateness() error {
	var ok map[string]bool
	return p.request("reset_lateness", &ok)
}

// Set changes a running link's direction ("up" or "down") now: the
// fields step sets, from the engine's link clock when it received the
// change, which it returns.
// Each change is kept as a link event (source "live"): LiveEvents.
func (p *Process) Set(link, direction string, step TimelineStep) (time.Duration, error) {
	return p.SetAs(EventLive, link, direction, step)
}

// SetAs is Set for a change made on the user's behalf by something other
// than `tlab link set` (a handover: EventHandover), kept as a link event
// of that source.
func (p *Process) SetAs(source, link, direction string, step TimelineStep) (time.Duration, error) {
	line, err := json.Marshal(control{Op: "set", Link: link, Direction: direction, Step: &step})
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, errors.New("emulator: already stopped")
	}
	if _, err := fmt.Fprintf(p.stdin, "%s\n", line); err != nil {
		return 0, fmt.Errorf("emulator: set: %w", err)
	}
	var r SetReply
	if err := p.readReply(&r, 5*time.Second); err != nil {
		return 0, err
	}
	if r.Error != "" {
		return time.Duration(r.AtNs), errors.New("emulator: set " + r.Error)
	}
	p.live = append(p.live, LinkEvent{Link: link, Direction: direction, Source: source, At: time.Duration(r.AtNs), Ramp: step.Ramp.D(), State: r.State})
	return time.Duration(r.AtNs), nil
}

// LiveEvents are the live changes made so far, in order.
func (p *Process) LiveEvents() []LinkEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.live)
}

// Close stops the engine and waits for it; it is safe to call twice.
func (p *Process) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	fmt.Fprintf(p.stdin, "{\"op\":\"stop\"}\n")
	p.stdin.Close()
	p.mu.Unlock()
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("emulator exited: %v: %s", err, p.stderr.String())
		}
		return err
	case <-time.After(3 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		return errors.New("emulator did not stop in 3 s and was killed")
	}
}

func ignoreInterrupt() { signal.Ignore(os.Interrupt) }

// lockedBuffer collects the child's stderr: exec's copying goroutine writes
// it while error paths here read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what the child has written, trimmed.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(bytes.TrimSpace(b.buf.Bytes()))
}
