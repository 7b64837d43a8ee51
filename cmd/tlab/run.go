package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"tlab/internal/cellrun"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"tlab/internal/emu"
	"tlab/internal/experiment"
	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/remote"
	"tlab/internal/results"
	"tlab/internal/units"
	"tlab/internal/workload"
)

// The default comparison: study A's four stacks on a LAN and on private 5G,
// in about two minutes.
const (
	defaultProtocols = "quic,tcp,h3,h1s"
	defaultProfiles  = "ethernet,5g"
)

// adhocFlags maps each ad-hoc flag to the scenario field it sets. An
// ad-hoc run is an in-memory scenario: these flags are shorthands for
// --set, and --set reaches every other field.
var adhocFlags = map[string]string{
	"protocols": "protocols", "profile": "profiles", "workload": "workload.type",
	"interval": "workload.interval", "payload": "workload.payload", "response-size": "workload.response_size",
	"duration": "duration", "count": "count", "warmup": "warmup", "seed": "seed", "capture": "capture",
	"remove-outliers": "metrics.remove_outliers", "tls-version": "settings.tls_version", "kex": "settings.key_exchange",
	"resumption": "settings.resumption", "0rtt": "settings.zero_rtt", "cc": "settings.tcp_congestion",
	"idle-timeout": "settings.idle_timeout", "h1-max-idle": "settings.h1_max_idle", "h1-client": "settings.h1_client", "emulator-mode": "emulator.mode",
	"link": "link",
}

// runSynopsis heads tlab run --help, in lines that fit 80 columns.
var runSynopsis = `run FILE|PRESET [--set key=value ...] [--out DIR]
       tlab run --resume DIR
       tlab run [ad-hoc flags] [--set key=value ...]

Run a scenario (a YAML file, or a preset: see tlab presets) into a results
directory with a report, continue an interrupted one, or compare protocols
ad hoc with the flags below: an in-memory scenario in which every flag is a
shorthand for a --set, and --set reaches any field (see docs/guide.md).
Ad hoc, what no flag sets is: ` + defaultProtocols + ` on ` + defaultProfiles + `,
25 ms interval, 256 B, 12 s each (about 2 minutes). Without any argument,
tlab run prints examples and runs nothing.

Examples:
  tlab run quick --out quick-run
  tlab run study-a-short --set link.loss=1% --out a
  tlab run --protocols tcp,quic --profile 5g --interval 10ms
  tlab run quick --require delay_p99_ms<=20 --require failed_pct<=1
  tlab run --resume quick-run`

// runFlagGroups orders tlab run --help: what to run and where it goes,
// then the ad-hoc scenario's fields, the stacks' settings, real paths
// and the run's own control.
var runFlagGroups = []flagGroup{
	{"Scenario and results", []string{"set", "out", "resume", "resume-existing", "json", "no-report", "serve", "allow-commands"}},
	{"The answer", []string{"require", "qoo"}},
	{"Ad hoc: what runs, where", []string{"protocols", "profile", "link", "workload", "interval", "payload", "response-size", "duration", "count", "warmup", "seed", "capture", "remove-outliers"}},
	{"Ad hoc: the stacks' settings", []string{"tls-version", "kex", "resumption", "0rtt", "cc", "idle-timeout", "h1-client", "h1-max-idle"}},
	{"A real path (tlab agent)", []string{"remote", "token-file", "state", "replay"}},
	{"The emulator and the host", []string{"emulator-mode", "quality", "no-calibration", "require-calibration", "shard"}},
}

// runExamples is what tlab run alone prints: it used to start a
// two-minute run of the defaults at once.
const runExamples = `Usage: tlab run FILE|PRESET [--set key=value ...] [--out DIR]
       tlab run --resume DIR
       tlab run [ad-hoc flags] [--set key=value ...]

For example:
  tlab run quick                          the first preset (about 2 minutes)
  tlab run --protocols tcp,quic --profile 5g --interval 25ms
                                          an ad-hoc comparison

tlab presets lists the presets; tlab run --help lists every flag.
`

// runFlags are tlab run's own flags (the ad-hoc ones are read back by
// name: adhocDocument).
type runFlags struct {
	sets, require  listFlag
	qooSpec        *string
	resume         *string
	noCal          *bool
	noReport       *bool
	requireCal     *bool
	shard          *string
	remoteAddr     *string
	tokenFile      *string
	replay         *string
	stateDir       *string
	resumeExisting *bool
	serve          *string
	allowCommands  *bool
	quality        *string
	out            *string
	asJSON         *bool
}

// newRunFlags declares tlab run's flags.
func newRunFlags(stderr io.Writer) (*flag.FlagSet, *runFlags) {
	fs := newGroupedFlags("run", runSynopsis, stderr, runFlagGroups)
	f := &runFlags{}
	f.qooSpec = fs.String("qoo", "", "a Quality of Outcome requirement profile (tlab qoo, or a LibreQoS FILE[#ID]): the answer also scores each stack 0-100 against it (a shorthand for --set qoo=...)")
	fs.Var(&f.require, "require", "what the application needs, a `metric<=bound` such as delay_p99_ms<=20 (repeatable; the first is the priority): the terminal and the report open with which stack meets it on each network (tlab advise)")
	fs.Var(&f.sets, "set", "override a scenario field, given as `key=value`, e.g. workload.interval=10ms (repeatable)")
	f.resume = fs.String("resume", "", "continue the interrupted run in DIR")
	f.noCal = fs.Bool("no-calibration", false, "scenario: skip the emulator calibration recorded in the manifest")
	f.noReport = fs.Bool("no-report", false, "do not write report.html")
	f.requireCal = fs.Bool("require-calibration", false, "refuse to run when the opening calibration does not pass")
	f.shard = fs.String("shard", "", "run only shard I/N of the cells (merge the shards with tlab merge); auto/N takes I from a Kubernetes Indexed Job or a Slurm job array")
	f.remoteAddr = fs.String("remote", "", "measure across the real path to the tlab agent at HOST:PORT (the servers there, the clients here)")
	f.tokenFile = fs.String("token-file", "", "with --remote: the agent's pairing file (tlab agent --token-file), needed the first time")
	f.replay = fs.String("replay", "", "with --remote: also run every cell on this recording of the path (tlab record's profile), alternately, and say where the replay agrees with the path (replay.csv, the report)")
	f.stateDir = fs.String("state", "", "with --remote: the controller's identity and known agents (default $TLAB_STATE_DIR or ~/.config/tlab)")
	f.resumeExisting = fs.Bool("resume-existing", false, "when --out already holds an interrupted run, continue it (for retried cluster tasks)")
	f.serve = fs.String("serve", "", "serve a live view of the run on ADDR, such as "+defaultServeAddr+" (tlab serve DIR does for any run directory)")
	f.allowCommands = fs.Bool("allow-commands", false, "run the commands a scenario file's stacks: name (shown first; they run as you, the invoking user under sudo); a preset needs no permission, a --resume always does")
	f.quality = fs.String("quality", "", "re-run cells the host disturbed: normal (default: up to 3 attempts), strict (5, tighter), off; a resume keeps the run's")
	fs.String("workload", "periodic", "traffic pattern: "+strings.Join(workload.Names(), ", ")+" (see tlab workloads)")
	fs.String("protocols", defaultProtocols, "comma-separated protocols: "+strings.Join(proto.Names(), ", "))
	fs.String("profile", defaultProfiles, "comma-separated link profiles; stack overlays with + (see tlab profiles)")
	fs.String("link", "", "override profile fields, e.g. rate=50Mbit,up.loss=1%; with --remote, a link tlab emulates in front of the real path")
	fs.Duration("interval", 25*time.Millisecond, "periodic: time between requests")
	fs.Int("payload", 256, "periodic: request payload bytes")
	fs.String("response-size", "", "periodic: response payload bytes (default: the request's payload)")
	fs.Duration("duration", 12*time.Second, "measured time per cell, after the warm-up")
	fs.Int("count", 0, "measured requests per cell instead of --duration")
	fs.Duration("warmup", 2*time.Second, "warm-up per cell: sent and recorded, kept out of the statistics")
	fs.Uint64("seed", 1, "seed of every random decision of the emulator")
	f.out = fs.String("out", "", "results directory (records, summaries, report); ad hoc without it, nothing is kept")
	fs.Bool("capture", false, "pcap per host interface, TLS key log and qlog per cell (needs --out)")
	fs.Bool("remove-outliers", false, "drop delays beyond 3 scaled MADs from the median (study B's rule); the count is reported")
	f.asJSON = fs.Bool("json", false, "print the summary rows as JSON instead of a table")
	fs.String("tls-version", "1.3", "TLS version over TCP: 1.3 or 1.2 (QUIC always uses 1.3)")
	fs.String("kex", "x25519", "TLS key exchange: x25519, x25519mlkem768 (post-quantum hybrid, larger handshake) or p256")
	fs.Bool("resumption", true, "let new TLS/QUIC connections resume sessions")
	fs.Bool("0rtt", false, "let resumed QUIC connections send 0-RTT data")
	fs.String("cc", "cubic", "TCP congestion control (see /proc/sys/net/ipv4/tcp_available_congestion_control)")
	fs.Duration("idle-timeout", 5*time.Second, "HTTP/1.1: close a connection idle for this long")
	fs.String("h1-client", proto.H1Strict, "HTTP/1.1 client: strict (tlab's: the idle connection or a new one the request waits for) or transport (net/http's Transport with its defaults)")
	fs.Int("h1-max-idle", 1, "HTTP/1.1 strict client: idle connections it keeps (1: one persistent connection)")
	fs.String("emulator-mode", emu.ModeAdaptive, "emulator timer mode: "+strings.Join(emu.Modes(), ", "))
	return fs, f
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, runExamples)
		return exitUsage
	}
	fs, f := newRunFlags(stderr)
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	sets := f.sets
	requirements, err := parseRequirements(f.require)
	if err != nil {
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	}
	if *f.qooSpec != "" {
		sets = append(sets, "qoo="+*f.qooSpec)
	}
	target, err := remoteTarget(*f.remoteAddr, *f.tokenFile, *f.stateDir)
	if err == nil && *f.replay != "" && *f.remoteAddr == "" {
		err = errors.New("--replay checks a recording against the real path: it goes with --remote")
	}
	if err != nil {
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	}
	var given []string
	fs.Visit(func(fl *flag.Flag) {
		if _, ok := adhocFlags[fl.Name]; ok {
			given = append(given, fl.Name)
		}
	})
	if *f.replay != "" && slices.Contains(given, "link") {
		fmt.Fprintln(stderr, "tlab run: --replay compares a recording with the path as it is, and --link emulates a link in front of the path: run the two apart")
		return exitUsage
	}
	if len(pos) == 1 || *f.resume != "" {
		if len(given) > 0 {
			for i := range given {
				given[i] = "--" + given[i]
			}
			fmt.Fprintf(stderr, "tlab run: %s apply to ad-hoc runs; with a scenario use --set (for example --set workload.interval=10ms)\n", strings.Join(given, ", "))
			return exitUsage
		}
		name := ""
		if len(pos) == 1 {
			name = pos[0]
		}
		o := runOptions{serve: *f.serve, require: requirements, remote: target, replay: *f.replay, nameOrFile: name, resume: *f.resume, sets: sets, out: *f.out, noCal: *f.noCal, noReport: *f.noReport, asJSON: *f.asJSON, quality: *f.quality, requireCal: *f.requireCal, shard: *f.shard, resumeExisting: *f.resumeExisting, allowCommands: *f.allowCommands}
		return runNamed(ctx, o, args, stdout, stderr)
	}
	doc, flagSets, err := adhocDocument(fs, given)
	if err != nil {
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	}
	// Ad hoc, the run goes through the same runner as any scenario (which
	// builds it from the document, as it would a file), into --out or
	// into a directory removed at the end; no calibration unless it is
	// kept.
	return runScenario(ctx, runOptions{serve: *f.serve, require: requirements, remote: target, replay: *f.replay, adhocDoc: doc, sets: append(flagSets, sets...), out: *f.out, noCal: *f.out == "" || *f.noCal, noReport: *f.out == "" || *f.noReport, asJSON: *f.asJSON, adhoc: true, quality: *f.quality, requireCal: *f.requireCal, shard: *f.shard}, args, stdout, stderr)
}

// runNamed runs a named scenario, preset or suite, or resumes a run
// directory (a suite's too).
func runNamed(ctx context.Context, o runOptions, args []string, stdout, stderr io.Writer) int {
	if o.resume != "" {
		if suite, isSuite, err := experiment.ResumeSuite(o.resume); err != nil {
			fmt.Fprintf(stderr, "tlab run: %v\n", err)
			return exitUsage
		} else if isSuite {
			o.resume, o.sets = "", nil
			return runSuite(ctx, o, suite, args, stdout, stderr)
		}
	} else if rec, isSuite, err := experiment.SuiteFor(o.nameOrFile, o.sets); err != nil {
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	} else if isSuite {
		return runSuite(ctx, o, experiment.Suite{Record: rec, Dir: o.out}, args, stdout, stderr)
	}
	return runScenario(ctx, o, args, stdout, stderr)
}

// remoteTarget reads --remote's flags.
func remoteTarget(addr, tokenFile, stateDir string) (*cellrun.RemoteTarget, error) {
	if addr == "" {
		switch {
		case tokenFile != "":
			return nil, errors.New("--token-file goes with --remote HOST:PORT")
		case stateDir != "":
			// A resume of a remote run: its manifest names the agent.
			return &cellrun.RemoteTarget{StateDir: stateDir}, nil
		}
		return nil, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("--remote %s: want HOST:PORT (the agent's --listen; its default port is %d)", addr, remote.DefaultPort)
	}
	t := &cellrun.RemoteTarget{Addr: addr, StateDir: stateDir}
	if tokenFile != "" {
		data, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		p, err := remote.ParsePairing(data)
		if err != nil {
			return nil, fmt.Errorf("--token-file %s: %w", tokenFile, err)
		}
		t.Pairing = &p
	}
	return t, nil
}

// adhocDocument is an ad-hoc run's scenario as a document of defaults and
// the flags the user gave that set whole fields, and the overrides the
// other flags are shorthands for (--set's go after them): the run builds
// the scenario from them, as from a file.
func adhocDocument(fs *flag.FlagSet, given []string) ([]byte, []string, error) {
	doc := map[string]any{
		"name":        "adhoc",
		"description": "An ad-hoc comparison (tlab run with flags).",
		"profiles":    splitList(defaultProfiles),
		"protocols":   splitList(defaultProtocols),
		"workload":    map[string]any{"type": "periodic"},
		"duration":    "12s",
		"warmup":      "2s",
		"seed":        1,
	}
	var flagSets []string
	for _, name := range given {
		v := fs.Lookup(name).Value.String()
		path := adhocFlags[name]
		// A number that must not be negative is named by its flag, not
		// by the scenario field it sets.
		if strings.HasPrefix(strings.TrimSpace(v), "-") {
			return nil, nil, fmt.Errorf("--%s %s: must not be negative", name, v)
		}
		switch name {
		case "protocols", "profile":
			doc[path] = splitList(v)
		case "count":
			delete(doc, "duration")
			if slices.Contains(given, "duration") {
				return nil, nil, errors.New("--duration and --count: give one, not both")
			}
			flagSets = append(flagSets, path+"="+v)
		case "link":
			ov, err := emu.ParseOverrides(v)
			if err != nil {
				return nil, nil, fmt.Errorf("--link: %w", err)
			}
			doc["link"] = ov
		default:
			flagSets = append(flagSets, path+"="+v)
		}
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, nil, err
	}
	return data, flagSets, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// isTerminal tells whether w is a terminal, where a progress line may be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// printRows prints summary rows as a table, a blank line between profiles:
// the workload's table columns, then the emulator's own release error.
func printRows(w io.Writer, rows []results.Summary, info workload.Info) {
	// One block per network, in the order the networks first appear (a
	// replay check runs them alternately).
	order := map[string]int{}
	for _, r := range rows {
		if _, ok := order[r.Profile]; !ok {
			order[r.Profile] = len(order)
		}
	}
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b results.Summary) int { return order[a.Profile] - order[b.Profile] })
	n := countRows(rows)
	// The emulator's release error and, beside it, what it cost: its CPU
	// seconds over the cell's window.
	cols := append(slices.Clone(info.Table), "emu_release_p99_us", "emu_cpu_s")
	if n.disturbed > 0 {
		cols = append(cols, "overlapping_runs")
	}
	if n.reran > 0 {
		cols = append(cols, "attempts_discarded")
	}
	header := []string{"PROFILE", "PROTOCOL", "SWEPT"}
	for _, c := range cols {
		m, _ := metrics.Lookup(c)
		header = append(header, m.Header)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	prev := ""
	for _, r := range rows {
		if prev != "" && r.Profile != prev {
			fmt.Fprintln(tw, strings.Repeat("\t", len(header)))
		}
		prev = r.Profile
		var swept []string
		for _, p := range r.Params {
			swept = append(swept, p.Value)
		}
		protocol := r.Protocol
		if strings.HasPrefix(r.Label("quality"), "disturbed") {
			protocol += " (!)"
		}
		if r.Label("cell_error") != "" {
			protocol += " (failed)"
		}
		cells := []string{r.Profile, protocol, strings.Join(swept, "/")}
		for _, c := range cols {
			cells = append(cells, metrics.Default.Format(c, r.Float(c)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	printFootnotes(w, cols, n, len(rows))
}

// rowCounts are how many rows ran beside other runs (disturbed), were
// run again (reran), stayed disturbed in every attempt (dirty) and
// failed.
type rowCounts struct{ disturbed, reran, dirty, failed int }

func countRows(rows []results.Summary) rowCounts {
	var n rowCounts
	for _, r := range rows {
		if r.Float("overlapping_runs") > 0 {
			n.disturbed++
		}
		if r.Float("attempts_discarded") > 0 {
			n.reran++
		}
		if strings.HasPrefix(r.Label("quality"), "disturbed") {
			n.dirty++
		}
		if r.Label("cell_error") != "" {
			n.failed++
		}
	}
	return n
}

// printFootnotes explains the table's columns and marks.
func printFootnotes(w io.Writer, cols []string, n rowCounts, rows int) {
	if slices.Contains(cols, "late_sends") {
		fmt.Fprintln(w, "\nLATE: sends more than 1 ms behind schedule: a protocol that cannot multiplex made them wait, or the host")
		fmt.Fprintln(w, "stalled the sender (then EMU p99 is high too). UNSENT: requests still waiting when the schedule ended.")
	}
	fmt.Fprintln(w, "EMU p99 us: the emulator's own release error during the cell; EMU CPU s: the CPU time it used for it.")
	if n.disturbed > 0 {
		fmt.Fprintf(w, "OTHER RUNS: %d of %d cells ran beside other tlab runs, which shared the CPUs: their timings are disturbed (the run's warnings name them).\n", n.disturbed, rows)
	}
	if n.reran > 0 {
		fmt.Fprintf(w, "RERUNS: %s disturbed by the host and run again (every attempt is in records.csv, column attempt).\n", units.Count(n.reran, "cell"))
	}
	if n.failed > 0 {
		fmt.Fprintf(w, "(failed): %s failed (summary column cell_error says why; their records up to the failure are kept).\n", units.Count(n.failed, "cell"))
	}
	if n.dirty > 0 {
		fmt.Fprintf(w, "(!): %s disturbed in every attempt; each row shows its least disturbed attempt (summary column quality says why).\n", units.Count(n.dirty, "cell"))
	}
}
