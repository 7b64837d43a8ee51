package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/plan"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// Shell is `tlab shell`: a user's own commands inside one of tlab's
// emulated networks, as mahimahi's shells and netem on an interface offer,
// with tlab's seeded models, queue disciplines, cross traffic and
// calibration. The client's host runs the command (or an interactive
// shell), the server's host an optional server for the shell's life; both
// directions are impaired as the network says. On exit it accounts for
// what the link did.
type Shell struct {
	// Scenario is the network: its first profile, link overrides,
	// topology, seed, emulator options and cross traffic (the command line
	// builds one in memory; --scenario FILE gives a file's). Its workload's
	// first role is the client, its second the server.
	Scenario *scenario.Scenario
	// Server, when set, is a shell command run in the server's host for
	// the shell's life (sh -c), given ServerWait to start listening.
	Server     string
	ServerWait time.Duration
	// Command runs in the client's host; empty runs an interactive shell
	// ($SHELL, or /bin/sh) whose prompt says where it is.
	Command []string
	// Out, when set, keeps the account (shell.json), the server's output
	// (server.log) and, with Capture, a pcap per interface (captures/).
	Out     string
	Capture bool
	// Credential, when set, runs the commands as that user; UserEnv is
	// that user's HOME, USER and LOGNAME, put after tlab's environment.
	Credential *syscall.Credential
	UserEnv    []string
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
	// Ready, when set, hears the hosts' addresses once the network is up,
	// before the commands start.
	Ready func(ShellEnv)
}

// ShellEnv is what the commands find in their environment: TLAB_SERVER,
// the server's address as the client reaches it, TLAB_CLIENT, the
// client's as the server does, and one TLAB_ROLE for each other role.
type ShellEnv map[string]string

// ShellAccount is what the link did over the shell's life.
type ShellAccount struct {
	Network string   `json:"network"`
	Seed    uint64   `json:"seed"`
	Command []string `json:"command,omitempty"`
	Server  string   `json:"server,omitempty"`
	// ExitStatus is the command's (128+N for signal N).
	ExitStatus int `json:"exit_status"`
	// ServerEnded says how the server ended before the shell did ("" when
	// it ran to the end).
	ServerEnded string             `json:"server_ended,omitempty"`
	DurationS   float64            `json:"duration_s"`
	Env         ShellEnv           `json:"env"`
	Links       []ShellLink        `json:"links"`
	Release     emu.LatencySummary `json:"emulator_release_error"`
	Host        hostnoise.Sample   `json:"host"`
	// Cross holds the cross traffic's columns, when the network had any.
	Cross map[string]float64 `json:"cross,omitempty"`
}

// ShellLink is one link's account: up is A to B (client to server on a
// client-server topology).
type ShellLink struct {
	Name string         `json:"name"`
	Up   ShellDirection `json:"up"`
	Down ShellDirection `json:"down"`
}

// ShellDirection is one direction's account.
type ShellDirection struct {
	Packets   uint64            `json:"packets"`
	Bytes     uint64            `json:"bytes"`
	Delivered uint64            `json:"delivered_packets"`
	Drops     map[string]uint64 `json:"drops"`
	ECNMarked uint64            `json:"ecn_marked"`
	// The queue's sojourn times: median, 99th percentile and maximum.
	QueueP50Ms float64 `json:"queue_p50_ms"`
	QueueP99Ms float64 `json:"queue_p99_ms"`
	QueueMaxMs float64 `json:"queue_max_ms"`
}

func directionAccount(d emu.DirectionStats) ShellDirection {
	drops := map[string]uint64{}
	for cause, n := range map[string]uint64{"loss": d.DropLoss, "queue": d.DropQueue, "outage": d.DropOutage, "oversize": d.DropOversz,
		"tx_error": d.DropTxError, "wifi_retries": d.DropRetries} {
		if n > 0 {
			drops[cause] = n
		}
	}
	return ShellDirection{Packets: d.RxPackets, Bytes: d.RxBytes, Delivered: d.TxPackets, Drops: drops, ECNMarked: d.ECNMarked,
		QueueP50Ms: d.QueueDelay.Quantile(0.5), QueueP99Ms: d.QueueDelay.Quantile(0.99), QueueMaxMs: float64(d.QueueDelayMaxNs) / 1e6}
}

// MarshalJSON writes the account with unknown percentiles (no packet
// queued) as null: JSON has no NaN.
func (d ShellDirection) MarshalJSON() ([]byte, error) {
	type plain ShellDirection
	type nullable struct {
		plain
		QueueP50Ms *float64 `json:"queue_p50_ms"`
		QueueP99Ms *float64 `json:"queue_p99_ms"`
	}
	num := func(v float64) *float64 {
		if v != v {
			return nil
		}
		return &v
	}
	return json.Marshal(nullable{plain(d), num(d.QueueP50Ms), num(d.QueueP99Ms)})
}

// ShellFile is where --out keeps the account.
const ShellFile = "shell.json"

// Run builds the network, runs the server and the command, and returns
// the account once the command has ended (or ctx was cancelled: the
// command gets SIGTERM, then SIGKILL). Nothing it started outlives it.
// The shell is a cell like any other: RunCell opens the testbed, starts
// what runs beside, runs the commands as the cell's workload (shellCommands)
// and reads the link over their life.
func (sh Shell) Run(ctx context.Context) (*ShellAccount, error) {
	sc := sh.Scenario
	cells, err := plan.Compile(sc)
	if err != nil {
		return nil, err
	}
	cell := cells[0]
	if cell.Site != "" {
		return nil, fmt.Errorf("tlab shell runs on emulated links: network %s is the %s site", cell.Profile, cell.Site)
	}
	spec := cellrun.SpecOf(cell, 1)
	info := spec.Workload.Info()
	if len(info.Roles) < 2 {
		return nil, fmt.Errorf("the scenario's workload has no server role to place the server in")
	}
	spec.Label = "tlab shell on " + cell.Profile
	if sh.Out != "" {
		if err := results.PrepareOut(sh.Out); err != nil {
			return nil, err
		}
		if sh.Capture {
			spec.CaptureDir = filepath.Join(sh.Out, "captures")
		}
		// RunCell writes the links' timelines and live changes (tlab
		// link set) there, as link-events.csv, their window from the
		// command's start.
		spec.Dir = sh.Out
	}
	acct := &ShellAccount{Network: cell.Profile, Seed: spec.Cell.Seed, Command: sh.Command, Server: sh.Server}
	spec.Workload = &shellCommands{sh: sh, roles: info.Roles, acct: acct}
	res, err := cellrun.RunCell(ctx, spec, nil, nil)
	if err != nil {
		return nil, err
	}
	for _, l := range spec.Topology.Links {
		ls := res.Links[l.Name]
		acct.Links = append(acct.Links, ShellLink{Name: l.Name, Up: directionAccount(ls.Up), Down: directionAccount(ls.Down)})
	}
	acct.Release, acct.Host = res.Release, res.Host
	for _, b := range cellrun.Besides(spec) {
		for _, k := range b.Columns() {
			if v := res.Summary.Float(k); v == v { // JSON has no NaN: what was not measured is left out
				if acct.Cross == nil {
					acct.Cross = map[string]float64{}
				}
				acct.Cross[k] = v
			}
		}
	}
	if sh.Out != "" {
		if err := writeShellAccount(sh.Out, acct); err != nil {
			return acct, err
		}
	}
	return acct, ctx.Err()
}

// shellCommands is tlab shell's interactive workload: the server command
// in the host of the workload's second role for the shell's life, the
// command (or an interactive shell) in the first's. It emits no records;
// its window is the commands' life, and it fills in the account.
type shellCommands struct {
	sh    Shell
	roles []string // the scenario's workload's: client, server, others
	acct  *ShellAccount
}

func (w *shellCommands) Info() workload.Info { return workload.Info{Type: "shell", Roles: w.roles} }

func (w *shellCommands) Run(ctx context.Context, e *workload.Env) error {
	sh, acct := w.sh, w.acct
	clientRole, serverRole := w.roles[0], w.roles[1]
	client, okc := e.Hosts.Net(clientRole).(proto.ProcessHost)
	server, oks := e.Hosts.Net(serverRole).(proto.ProcessHost)
	if !okc || !oks {
		return errors.New("tlab shell runs commands in a testbed's hosts: this site has none")
	}
	env, err := w.environment(e, acct.Network)
	if err != nil {
		return err
	}
	acct.Env = env
	if sh.Ready != nil {
		sh.Ready(env)
	}
	e.StartWindow()
	began := time.Now()

	srv, closeLog, err := sh.startServer(ctx, server, env)
	defer closeLog()
	if err != nil {
		return err
	}
	if srv != nil {
		defer srv.Stop()
	}

	cmd, cleanup, err := sh.clientCommand(env, acct.Network)
	if err != nil {
		return err
	}
	defer cleanup()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sh.Stdin, sh.Stdout, sh.Stderr
	cl, err := proto.StartIsolated(client, cmd, sh.Credential)
	if err != nil {
		return fmt.Errorf("command: %w", err)
	}
	var serverDone <-chan struct{}
	if srv != nil {
		serverDone = srv.Done
	}
	for waiting := true; waiting; {
		select {
		case <-cl.Done:
			waiting = false
		case <-serverDone:
			acct.ServerEnded = exitText(srv.Cmd.ProcessState)
			serverDone = nil
		case <-ctx.Done():
			cl.Stop()
			waiting = false
		}
	}
	<-cl.Done
	acct.ExitStatus = exitStatus(cmd.ProcessState)
	acct.DurationS = time.Since(began).Seconds()
	if srv != nil {
		select {
		case <-srv.Done:
			if acct.ServerEnded == "" {
				acct.ServerEnded = exitText(srv.Cmd.ProcessState)
			}
		default:
		}
		srv.Stop()
	}
	return nil
}

// environment is what the commands are told of the network: each
// role's address as the client reaches it (TLAB_ROLE, TLAB_SERVER), the
// client's as the server does (TLAB_CLIENT), and the network's name.
func (w *shellCommands) environment(e *workload.Env, network string) (ShellEnv, error) {
	clientRole, serverRole := w.roles[0], w.roles[1]
	env := ShellEnv{}
	for _, role := range w.roles[1:] {
		ip, err := e.Hosts.Addr(clientRole, role)
		if err != nil {
			return nil, err
		}
		env["TLAB_"+strings.ToUpper(role)] = ip.String()
	}
	if ip, err := e.Hosts.Addr(serverRole, clientRole); err == nil {
		env["TLAB_CLIENT"] = ip.String()
	}
	env["TLAB_SERVER"] = env["TLAB_"+strings.ToUpper(serverRole)]
	env["TLAB_NETWORK"] = network
	return env, nil
}

// startServer starts the server command, when there is one, in the
// server's host (its output into --out's server.log) and gives it
// ServerWait to come up; closeLog closes the log, also after an error.
func (sh Shell) startServer(ctx context.Context, server proto.ProcessHost, env ShellEnv) (srv *proto.Isolated, closeLog func(), err error) {
	closeLog = func() {}
	if sh.Server == "" {
		return nil, closeLog, nil
	}
	var log io.Writer = io.Discard
	if sh.Out != "" {
		f, err := results.Create(filepath.Join(sh.Out, "server.log"))
		if err != nil {
			return nil, closeLog, err
		}
		closeLog = func() { f.Close() }
		log = f
	}
	cmd := exec.Command("/bin/sh", "-c", sh.Server)
	cmd.Env, cmd.Stdout, cmd.Stderr = append(environ(env), sh.UserEnv...), log, log
	if srv, err = proto.StartIsolated(server, cmd, sh.Credential); err != nil {
		return nil, closeLog, fmt.Errorf("server: %w", err)
	}
	select {
	case <-time.After(sh.ServerWait):
	case <-srv.Done:
	case <-ctx.Done():
	}
	return srv, closeLog, nil
}

// environ is the commands' environment: tlab's own and the addresses.
func environ(env ShellEnv) []string {
	out := os.Environ()
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// promptText is a network's name as a prompt shows it: shells expand
// their prompt ($(...), `...`, backslash escapes, bash's \! and zsh's %),
// so anything but letters, digits and plain punctuation becomes "?": a
// profile file's name is someone else's text.
func promptText(network string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(" _.,:/+=@~-", r):
			return r
		}
		return '?'
	}, network)
}

// bashPromptRC is the rc file of an interactive bash: the user's own,
// then the prompt prefixed from $TLAB_PROMPT. Constant text: no name
// enters it.
const bashPromptRC = "[ -f ~/.bashrc ] && . ~/.bashrc\nPS1=\"${TLAB_PROMPT}${PS1}\"\n"

// clientCommand is the command, or an interactive shell whose prompt
// names the network (bash gets an rc file that keeps the user's own and
// prefixes its prompt).
func (sh Shell) clientCommand(env ShellEnv, network string) (*exec.Cmd, func(), error) {
	nothing := func() {}
	if len(sh.Command) > 0 {
		cmd := exec.Command(sh.Command[0], sh.Command[1:]...)
		cmd.Env = append(environ(env), sh.UserEnv...)
		return cmd, nothing, nil
	}
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	prompt := "[tlab " + promptText(network) + "] "
	environ := append(append(environ(env), sh.UserEnv...), "TLAB_PROMPT="+prompt)
	if filepath.Base(shell) != "bash" {
		cmd := exec.Command(shell, "-i")
		cmd.Env = append(environ, "PS1="+prompt+"$ ")
		return cmd, nothing, nil
	}
	rc, err := os.CreateTemp("", "tlab-shell-rc-")
	if err != nil {
		return nil, nothing, err
	}
	rc.WriteString(bashPromptRC)
	if sh.Credential != nil {
		rc.Chown(int(sh.Credential.Uid), int(sh.Credential.Gid))
	}
	rc.Close()
	cmd := exec.Command(shell, "--rcfile", rc.Name(), "-i")
	cmd.Env = environ
	return cmd, func() { os.Remove(rc.Name()) }, nil
}

// exitStatus is a command's exit status as a shell gives it (128+N for
// signal N).
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// exitText says how a command ended.
func exitText(ps *os.ProcessState) string {
	if ps == nil {
		return "it did not start"
	}
	return ps.String()
}

// writeShellAccount writes shell.json into dir.
func writeShellAccount(dir string, acct *ShellAccount) error {
	return results.WriteAtomic(filepath.Join(dir, ShellFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(acct)
	})
}

// OwnsItsStack marks the shell's commands as a stack of their own: no
// registered protocol is looked up for them.
func (*shellCommands) OwnsItsStack() {}
