package workload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"tlab/internal/proto"
	"tlab/internal/units"
	"tlab/internal/untrusted"
)

// CommandStack is a user's own stack given as commands, beside the
// built-in ones: a server command, a client command that produces the
// workload's traffic itself and reports one event per message, and the
// format it reports them in (EventFormats).
type CommandStack struct {
	Name   string
	Server string
	Client string
	Events string
}

// Command runs a stack given as commands in a cell, in place of the
// workload Base: Base's parameters fill the commands' templates and its
// metrics apply to the records the client's events become, so that the
// stack is measured as any built-in one on the same seeds. The commands
// run in the cell's hosts, never on a remote agent.
type Command struct {
	Base   Workload
	Stack  CommandStack
	Params map[string]string // the workload's parameters by name, as the scenario gives them (defaults filled)
	Seed   uint64
	Common Common
}

// Info is Base's, for the command stack's own name.
func (c Command) Info() Info {
	info := c.Base.Info()
	info.Check = nil
	info.Describe = fmt.Sprintf("%s, by the commands of stack %s", info.Describe, c.Stack.Name)
	return info
}

// The fixed placeholders of a command's template; the workload's own are
// {workload.NAME} (as the scenario gives it), and for a duration
// {workload.NAME_ms} and {workload.NAME_s}, for a size {workload.NAME_bytes}.
var commandPlaceholders = []string{"listen", "server", "server_ip", "client_ip", "port", "seed", "count", "duration_s", "warmup_s", "events", "dir"}

var placeholderRE = regexp.MustCompile(`\{([a-z0-9_.]+)\}`)

// CommandPlaceholders lists the names a template may use for a workload
// with params.
func CommandPlaceholders(params map[string]string) []string {
	out := slices.Clone(commandPlaceholders)
	for name, v := range params {
		out = append(out, "workload."+name)
		if _, err := units.ParseDuration(v); err == nil {
			out = append(out, "workload."+name+"_ms", "workload."+name+"_s")
		}
		if _, err := units.ParseSize(v); err == nil {
			out = append(out, "workload."+name+"_bytes")
		}
	}
	slices.Sort(out)
	return out
}

// CheckTemplate says the first placeholder of tmpl that is not known.
func CheckTemplate(tmpl string, params map[string]string) error {
	known := CommandPlaceholders(params)
	for _, m := range placeholderRE.FindAllStringSubmatch(tmpl, -1) {
		if !slices.Contains(known, m[1]) {
			return fmt.Errorf("unknown placeholder {%s}: want one of {%s}", m[1], strings.Join(known, "}, {"))
		}
	}
	return nil
}

// plainValue is a value /bin/sh reads as one word as it is (numbers,
// addresses, paths, durations), so that $(( {workload.payload} + 12 ))
// works; anything else is quoted.
var plainValue = regexp.MustCompile(`^[A-Za-z0-9_.:/+@%=,-]+$`)

// fill replaces each placeholder by its value, quoted for /bin/sh where
// it is not a plain word.
func fill(tmpl string, values map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(tmpl, func(m string) string {
		v, ok := values[m[1:len(m)-1]]
		if !ok {
			return m
		}
		if plainValue.MatchString(v) {
			return v
		}
		return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
	})
}

// values are the placeholders' values for one cell.
func (c Command) values(serverIP, clientIP net.IP, port int, events, dir string) map[string]string {
	info := c.Base.Info()
	count := info.Records
	if c.Common.Count > 0 {
		count = c.Common.Count
	}
	v := map[string]string{
		"listen": ":" + strconv.Itoa(port), "server": net.JoinHostPort(serverIP.String(), strconv.Itoa(port)),
		"server_ip": serverIP.String(), "client_ip": clientIP.String(), "port": strconv.Itoa(port),
		"seed": strconv.FormatUint(c.Seed, 10), "count": strconv.Itoa(count),
		"duration_s": strconv.FormatFloat(c.runFor().Seconds(), 'f', -1, 64),
		"warmup_s":   strconv.FormatFloat(c.Common.Warmup.Seconds(), 'f', -1, 64),
		"events":     events, "dir": dir,
	}
	for name, val := range c.Params {
		v["workload."+name] = val
		if d, err := units.ParseDuration(val); err == nil {
			v["workload."+name+"_ms"] = strconv.FormatFloat(float64(d.D())/1e6, 'f', -1, 64)
			v["workload."+name+"_s"] = strconv.FormatFloat(d.D().Seconds(), 'f', -1, 64)
		}
		if s, err := units.ParseSize(val); err == nil {
			v["workload."+name+"_bytes"] = strconv.FormatInt(int64(s), 10)
		}
	}
	return v
}

// runFor is how long the client runs in all, warm-up included: the
// scenario's duration and warm-up, or the workload's plan for a count.
func (c Command) runFor() time.Duration {
	if c.Common.Duration > 0 {
		return c.Common.Warmup + c.Common.Duration
	}
	return c.Base.Info().Planned
}

// commandServerWait is how long the server gets to start listening.
const commandServerWait = 500 * time.Millisecond

// Run starts the server command in the server's host, runs the client
// command in the client's host until it ends (or its time is up), and
// turns the events it reported into records. A command that fails, hangs
// or reports nothing fails the cell with the tail of its standard error;
// both commands' output is kept in the cell's directory (server.log,
// client.log), never on the terminal.
func (c Command) Run(ctx context.Context, env *Env) error {
	clientHost, ok1 := env.Hosts.Net("client").(proto.ProcessHost)
	serverHost, ok2 := env.Hosts.Net("server").(proto.ProcessHost)
	if !ok1 || !ok2 {
		return fmt.Errorf("stack %s is given as commands: they run in the testbed's hosts, never on a remote agent", c.Stack.Name)
	}
	serverIP, err := env.Hosts.Addr("client", "server")
	if err != nil {
		return err
	}
	clientIP, err := env.Hosts.Addr("server", "client")
	if err != nil {
		return err
	}
	dir := env.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tlab-command-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	ext := map[string]string{EventsCSV: ".csv", EventsIrtt: ".json", EventsIperf3: ".json"}[c.Stack.Events]
	if ext == "" {
		ext = ".jsonl"
	}
	events := filepath.Join(dir, "events"+ext)
	os.Remove(events) // an earlier attempt's
	values := c.values(serverIP, clientIP, env.Port(ServerPort), events, dir)
	logFile := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}

	if c.Stack.Server != "" {
		log, err := logFile("server.log")
		if err != nil {
			return err
		}
		defer log.Close()
		srv, err := startCommand(serverHost, fill(c.Stack.Server, values), log, log)
		if err != nil {
			return fmt.Errorf("stack %s's server: %w", c.Stack.Name, err)
		}
		defer srv.Stop()
		select {
		case <-time.After(commandServerWait):
		case <-srv.Done:
			env.Fail(fmt.Sprintf("stack %s's server ended at once: %s", c.Stack.Name, tail(filepath.Join(dir, "server.log"))))
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	clientLog, err := logFile("client.log")
	if err != nil {
		return err
	}
	defer clientLog.Close()
	clientOut, err := os.Create(filepath.Join(dir, "client.out"))
	if err != nil {
		return err
	}
	defer clientOut.Close()
	started := time.Now()
	cmd := exec.Command("/bin/sh", "-c", fill(c.Stack.Client, values))
	cmd.Env = append(os.Environ(), "TLAB_SERVER="+serverIP.String(), "TLAB_CLIENT="+clientIP.String())
	cmd.Stdout, cmd.Stderr = clientOut, clientLog
	client, err := proto.StartIsolated(clientHost, cmd, nil)
	if err != nil {
		return fmt.Errorf("stack %s's client: %w", c.Stack.Name, err)
	}
	defer client.Stop()
	window := time.AfterFunc(c.Common.Warmup, env.StartWindow)
	defer window.Stop()
	limit := 2*c.Base.Info().Planned + 10*time.Second
	var why string
	select {
	case <-client.Done:
		if st := cmd.ProcessState; st != nil && !st.Success() {
			why = fmt.Sprintf("stack %s's client %s: %s", c.Stack.Name, st, tail(filepath.Join(dir, "client.log")))
		}
	case <-time.After(limit):
		client.Stop()
		why = fmt.Sprintf("stack %s's client did not end within %v: %s", c.Stack.Name, limit, tail(filepath.Join(dir, "client.log")))
	case <-ctx.Done():
		return ctx.Err()
	}
	ended := time.Now()
	evs, err := c.readEvents(events, filepath.Join(dir, "client.out"))
	if err == nil {
		records, rerr := EventsToRecords(evs, started, ended, c.Common.Warmup, time.Second)
		if rerr != nil {
			err = rerr
		} else {
			for _, r := range records {
				env.Emit(r)
			}
		}
	}
	switch {
	case why != "":
		env.Fail(why)
	case err != nil:
		env.Fail(fmt.Sprintf("stack %s: %v; %s", c.Stack.Name, err, tail(filepath.Join(dir, "client.log"))))
	}
	return nil
}

// readEvents reads the client's events file, or, when it wrote none, what
// it printed (a tool told to write its JSON to standard output).
func (c Command) readEvents(path, stdout string) ([]Event, error) {
	for _, p := range []string{path, stdout} {
		// Streamed, not read whole: a client's file may be far larger
		// than the events a cell keeps (ParseEvents stops at its cap).
		f, err := untrusted.Open(p)
		if err != nil {
			continue
		}
		br := bufio.NewReader(f)
		if !skipSpace(br) {
			f.Close()
			continue
		}
		evs, err := ParseEvents(c.Stack.Events, filepath.Base(p), br)
		f.Close()
		return evs, err
	}
	return nil, errors.New("the client wrote no events (to {events} or its standard output)")
}

// skipSpace skips leading white space in br and tells whether anything
// follows it.
func skipSpace(br *bufio.Reader) bool {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return false
		}
		if !strings.ContainsRune(" \t\n\r\v\f", rune(b)) {
			br.UnreadByte()
			return true
		}
	}
}

// startCommand runs a shell command line in host h, isolated.
func startCommand(h proto.ProcessHost, line string, stdout, stderr *os.File) (*proto.Isolated, error) {
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return proto.StartIsolated(h, cmd, nil)
}

// tail is the last lines of a log file, for a failure's message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return "(it wrote nothing to standard error)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "its standard error ends: " + strings.Join(lines, " | ")
}
