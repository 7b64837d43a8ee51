package testbed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// A host's servers out of tlab's process. A server tlab's own Go stacks
// run (a QUIC, HTTP/2 or HTTP/3 server) lives in tlab's process, which
// stays in the machine's root cgroup: a host's CPU limit (Topology.CPU)
// cannot reach it. So a limited host's servers run in a child of tlab,
// started inside the host the way its other programs are (Host.Start):
// in its network namespace and born inside its cgroup. The child is the
// tlab executable again (the emulator's pattern): it reads one request
// (a JSON line) on its standard input, starts that server in the network
// it runs in (the host's), answers one JSON line, and serves until it is
// told to stop (SIGTERM) or tlab goes away (its standard input closes;
// Pdeathsig kills it in any case).

// serverChildEnv marks the process as a host's server child.
const serverChildEnv = "TLAB_HOST_SERVER_CHILD"

// serverChildReply is the child's one answer: ready, or why not.
type serverChildReply struct {
	Ready bool   `json:"ready"`
	Error string `json:"error,omitempty"`
}

// serverStartTimeout bounds how long a child may take to start its
// server: a process start and a listen, seconds at most on a loaded
// machine, and slower inside a 1-vCPU cgroup.
const serverStartTimeout = 30 * time.Second

// CPULimited tells whether the host's topology limits its CPU: its
// servers must then run out of tlab's process (StartServerProcess) for
// the limit to reach them.
func (h *Host) CPULimited() bool { return h.cpu != nil }

// StartServerProcess starts a server in a child process inside the host
// (its network namespace and its cgroup): request, a JSON value, is what
// the child's serve function (RunServerChildIfRequested) is given. It
// returns once the server listens; closing the result stops the child.
// What the child logs goes to log (nil discards it) and, if it fails to
// start, into the error.
func (h *Host) StartServerProcess(request any, log io.Writer) (io.Closer, error) {
	line, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("server in %s: encoding its request: %w", h.Name, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("server in %s: locating own executable: %w", h.Name, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serverChildEnv+"=1")
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if log != nil {
		cmd.Stderr = io.MultiWriter(&stderr, log)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p, err := h.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("server in %s: %w", h.Name, err)
	}
	fail := func(err error) (io.Closer, error) {
		stdin.Close()
		p.Stop()
		if s := stderr.String(); s != "" {
			err = fmt.Errorf("%w (its log: %s)", err, s)
		}
		return nil, fmt.Errorf("server in %s: %w", h.Name, err)
	}
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		return fail(fmt.Errorf("sending its request: %w", err))
	}
	replies := make(chan serverChildReply, 1)
	readErr := make(chan error, 1)
	go func() {
		var r serverChildReply
		b, err := bufio.NewReader(stdout).ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			readErr <- err
			return
		}
		replies <- r
	}()
	select {
	case r := <-replies:
		if !r.Ready {
			return fail(errors.New(r.Error))
		}
	case err := <-readErr:
		return fail(fmt.Errorf("no answer from the child: %w", err))
	case <-p.Done():
		return fail(fmt.Errorf("the child ended before it served: %v", p.Err()))
	case <-time.After(serverStartTimeout):
		return fail(fmt.Errorf("the child did not start its server within %v", serverStartTimeout))
	}
	return serverProcess{p: p, stdin: stdin}, nil
}

// serverProcess is a running server child.
type serverProcess struct {
	p     *Process
	stdin io.Closer
}

// Close stops the child (SIGTERM: it closes its server and exits).
func (s serverProcess) Close() error {
	err := s.p.Stop()
	s.stdin.Close()
	return err
}

// RunServerChildIfRequested becomes a host's server child when this
// process was started as one (StartServerProcess), and never returns
// then: it gives serve the request line, answers, serves until SIGTERM
// or until its standard input closes, closes the server and exits.
// Programs that start testbeds call it first thing in main (tlab, and
// test binaries through tbtest.Main), as they do the emulator's.
func RunServerChildIfRequested(serve func(request []byte) (io.Closer, error)) {
	if os.Getenv(serverChildEnv) == "" {
		return
	}
	os.Exit(runServerChild(os.Stdin, os.Stdout, serve))
}

func runServerChild(in io.Reader, out io.Writer, serve func([]byte) (io.Closer, error)) int {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		fmt.Fprintf(os.Stderr, "server child: reading its request: %v\n", err)
		return 1
	}
	srv, err := serve(line)
	if err != nil {
		json.NewEncoder(out).Encode(serverChildReply{Error: err.Error()})
		return 1
	}
	if err := json.NewEncoder(out).Encode(serverChildReply{Ready: true}); err != nil {
		srv.Close()
		return 1
	}
	gone := make(chan struct{})
	go func() {
		io.Copy(io.Discard, r) // returns when tlab closes the pipe or dies
		close(gone)
	}()
	select {
	case <-stop:
	case <-gone:
	}
	if err := srv.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "server child: closing its server: %v\n", err)
	}
	return 0
}

// tailBuffer keeps the last 4 KiB written to it, safe for the process's
// copying goroutine and a reader.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 4096; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
