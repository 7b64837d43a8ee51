package workload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

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
// run in the cell's hosts, where those offer RunCommands (never on a
// tlab agent).
type Command struct {
	Base   Workload
	Stack  CommandStack
	Params map[string]string // the workload's parameters by name, as the scenario gives them (defaults filled)
	Seed   uint64
	Common Common
	// Credential, when set, runs the commands as that user (the one who
	// started tlab through sudo): they get a directory of their own,
	// {dir}, owned by that user, and the cell's other files stay root's.
	// Nil runs them as tlab runs.
	Credential *syscall.Credential
	// UserEnv is that user's HOME, USER and LOGNAME, put after tlab's
	// environment.
	UserEnv []string
}

// CommandsDir is the commands' own directory in a cell's directory:
// {dir}, where {events} is.
const CommandsDir = "commands"

// Info is Base's, for the command stack's own name.
func (c Command) Info() Info {
	info := c.Base.Info()
	info.Check = nil
	// The commands measure what the base workload would, by their own
	// clocks and records: its floor's proof is not theirs.
	info.Floor = nil
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

// commandEnvNames are the environment variables of the fixed
// placeholders; a workload's parameter {workload.NAME} is
// $TLAB_WORKLOAD_NAME. {server} is $TLAB_SERVER_ADDR because $TLAB_SERVER
// is the server's address alone, as in tlab shell.
var commandEnvNames = map[string]string{
	"listen": "TLAB_LISTEN", "server": "TLAB_SERVER_ADDR", "server_ip": "TLAB_SERVER_IP", "client_ip": "TLAB_CLIENT_IP",
	"port": "TLAB_PORT", "seed": "TLAB_SEED", "count": "TLAB_COUNT", "duration_s": "TLAB_DURATION_S",
	"warmup_s": "TLAB_WARMUP_S", "events": "TLAB_EVENTS", "dir": "TLAB_DIR",
}

// EnvName is the environment variable that carries placeholder name's
// value to the commands.
func EnvName(name string) string {
	if n, ok := commandEnvNames[name]; ok {
		return n
	}
	return "TLAB_" + strings.ToUpper(strings.ReplaceAll(name, ".", "_"))
}

// arithValue is what a placeholder inside $(( )) may hold: a number or a
// variable's name. The shell evaluates what a variable holds there as an
// expression, and bash runs $(...) in an array subscript of it.
var arithValue = regexp.MustCompile(`^[A-Za-z0-9_.]*$`)

// shellQuoting is where a shell lexer stands in a command line.
type shellQuoting int

const (
	unquoted     shellQuoting = iota
	doubleQuoted              // "..."
	singleQuoted              // '...'
	arithmetic                // $(( ... ))
	substitution              // $( ... ), unquoted inside
)

// script turns a template into the script /bin/sh runs: each placeholder
// becomes a reference to its environment variable (see EnvName), quoted
// as one word where it stands: "${TLAB_X}" outside quotes, ${TLAB_X}
// inside double quotes and $(( )), '"${TLAB_X}"' inside single quotes. A
// value never enters the script's text, so that nothing in it is read
// as code, wherever the template puts it; a placeholder with no value is
// left as it is. The lexer knows quotes, backslashes, $( ) and $(( ));
// where it misreads a line, a reference is split into words or kept
// whole, never evaluated as code.
func script(tmpl string, values map[string]string) (string, error) {
	type frame struct {
		q     shellQuoting
		depth int // open parentheses inside $( ) or $(( ))
	}
	stack := []frame{{q: unquoted}}
	var b strings.Builder
	for i := 0; i < len(tmpl); {
		top := &stack[len(stack)-1]
		if loc := placeholderRE.FindStringSubmatchIndex(tmpl[i:]); loc != nil && loc[0] == 0 {
			name := tmpl[i+loc[2] : i+loc[3]]
			v, ok := values[name]
			if !ok {
				b.WriteString(tmpl[i : i+loc[1]])
				i += loc[1]
				continue
			}
			ref := "${" + EnvName(name) + "}"
			switch top.q {
			case unquoted, substitution:
				ref = `"` + ref + `"`
			case singleQuoted:
				ref = `'"` + ref + `"'`
			case arithmetic:
				if !arithValue.MatchString(v) {
					return "", fmt.Errorf("{%s} inside $(( )) holds %q, which is not a number", name, v)
				}
			}
			b.WriteString(ref)
			i += loc[1]
			continue
		}
		c := tmpl[i]
		rest := tmpl[i:]
		switch top.q {
		case singleQuoted:
			if c == '\'' {
				stack = stack[:len(stack)-1]
			}
		case arithmetic:
			switch {
			case c == '(':
				top.depth++
			case c == ')' && top.depth == 0 && strings.HasPrefix(rest, "))"):
				stack = stack[:len(stack)-1]
				b.WriteString("))")
				i += 2
				continue
			case c == ')':
				top.depth--
			}
		default:
			switch {
			case c == '\\' && i+1 < len(tmpl):
				b.WriteString(tmpl[i : i+2])
				i += 2
				continue
			case c == '\'' && top.q != doubleQuoted:
				stack = append(stack, frame{q: singleQuoted})
			case c == '"' && top.q == doubleQuoted:
				stack = stack[:len(stack)-1]
			case c == '"':
				stack = append(stack, frame{q: doubleQuoted})
			case strings.HasPrefix(rest, "$(("):
				stack = append(stack, frame{q: arithmetic})
				b.WriteString("$((")
				i += 3
				continue
			case strings.HasPrefix(rest, "$("):
				stack = append(stack, frame{q: substitution})
				b.WriteString("$(")
				i += 2
				continue
			case c == '(' && top.q == substitution:
				top.depth++
			case c == ')' && top.q == substitution:
				if top.depth == 0 {
					stack = stack[:len(stack)-1]
				} else {
					top.depth--
				}
			}
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), nil
}

// commandEnv is the commands' environment: tlab's own, each placeholder's
// value in its variable (EnvName), and as in tlab shell the server's and
// the client's addresses in $TLAB_SERVER and $TLAB_CLIENT.
func commandEnv(values map[string]string) []string {
	env := os.Environ()
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		env = append(env, EnvName(name)+"="+values[name])
	}
	return append(env, "TLAB_SERVER="+values["server_ip"], "TLAB_CLIENT="+values["client_ip"])
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
	if err := Require(env.Hosts, []string{"client", "server"}, RunCommands); err != nil {
		return fmt.Errorf("stack %s is given as commands: %w", c.Stack.Name, err)
	}
	clientHost, ok1 := env.Hosts.Net("client").(proto.ProcessHost)
	serverHost, ok2 := env.Hosts.Net("server").(proto.ProcessHost)
	if !ok1 || !ok2 {
		return fmt.Errorf("stack %s is given as commands: the hosts offer %s, but a role's network cannot start a program", c.Stack.Name, RunCommands)
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
	own, err := c.commandsDir(dir)
	if err != nil {
		return fmt.Errorf("stack %s: %w", c.Stack.Name, err)
	}
	ext := map[string]string{EventsCSV: ".csv", EventsIrtt: ".json", EventsIperf3: ".json"}[c.Stack.Events]
	if ext == "" {
		ext = ".jsonl"
	}
	events := filepath.Join(own, "events"+ext)
	os.Remove(events) // an earlier attempt's (a link is removed, never followed)
	values := c.values(serverIP, clientIP, env.Port(ServerPort), events, own)
	environ := append(commandEnv(values), c.UserEnv...)
	serverScript, err1 := script(c.Stack.Server, values)
	clientScript, err2 := script(c.Stack.Client, values)
	if err := errors.Join(err1, err2); err != nil {
		env.Fail(fmt.Sprintf("stack %s: %v", c.Stack.Name, err))
		return nil
	}
	logFile := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}

	if c.Stack.Server != "" {
		log, err := logFile("server.log")
		if err != nil {
			return err
		}
		defer log.Close()
		srv, err := c.start(serverHost, serverScript, environ, log, log)
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
	client, err := c.start(clientHost, clientScript, environ, clientOut, clientLog)
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
		if st := client.Cmd.ProcessState; st != nil && !st.Success() {
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

// commandsDir makes the commands' own directory in dir, owned by the
// user they run as: they write there, tlab's own files beside it stay
// out of their reach.
func (c Command) commandsDir(dir string) (string, error) {
	own := filepath.Join(dir, CommandsDir)
	if err := os.Mkdir(own, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	if c.Credential == nil {
		return own, nil
	}
	// Through the open directory, never a link in its place.
	fd, err := unix.Open(own, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("%s: %w", own, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchown(fd, int(c.Credential.Uid), int(c.Credential.Gid)); err != nil {
		return "", fmt.Errorf("%s for uid %d: %w", own, c.Credential.Uid, err)
	}
	return own, nil
}

// readEvents reads the client's events file, or, when it wrote none, what
// it printed (a tool told to write its JSON to standard output). The
// events file is in the commands' own directory: a link there or a file
// that is not a regular one is refused, never followed.
func (c Command) readEvents(path, stdout string) ([]Event, error) {
	for _, p := range []string{path, stdout} {
		// Streamed, not read whole: a client's file may be far larger
		// than the events a cell keeps (ParseEvents stops at its cap).
		f, err := untrusted.OpenNoFollow(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
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

// start runs a script under /bin/sh in host h, isolated, with env, as
// the commands' user.
func (c Command) start(h proto.ProcessHost, script string, env []string, stdout, stderr *os.File) (*proto.Isolated, error) {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, stdout, stderr
	return proto.StartIsolated(h, cmd, c.Credential)
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
