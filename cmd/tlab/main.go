// Command tlab is a transport-protocol lab: it builds hosts in network
// namespaces, joins them by emulated links, runs real protocol stacks over
// them and measures what applications feel.
//
// Usage:
//
//	tlab <command> [flags]
//
// Run "tlab help" for the list of commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	_ "tlab/internal/proto/all" // every protocol family registers itself

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailure   = 1 // the command ran but its result is a failure (a check failed)
	exitUsage     = 2 // bad flags or input
	exitError     = 3 // the command could not run (privileges, system error)
	exitHostNoisy = 4 // calibrate: every failed check is explained by the host's own noise
	// exitInconclusive: calibrate: no check failed, but a check's interval
	// straddles its target, so the data cannot say it is met.
	exitInconclusive = 5
	exitCanceled     = 130
)

// exitMeanings say what each exit code means, for tlab(1)'s EXIT STATUS.
var exitMeanings = []struct {
	code    int
	meaning string
}{
	{exitOK, "done; with requirements (--require, a scenario's require:), some stack met them"},
	{exitFailure, "the command ran but its result is a failure: no stack met the requirements, or a check failed"},
	{exitUsage, "a usage error: a flag, an argument, or a scenario that does not validate"},
	{exitError, "the command could not run (privileges, a system error)"},
	{exitHostNoisy, "tlab calibrate: every failed check is explained by the host's own noise"},
	{exitInconclusive, "tlab calibrate: no check failed, but an interval straddles its target"},
	{exitCanceled, "interrupted (Ctrl-C, SIGTERM); what was measured is kept, and --resume goes on"},
}

// command is one subcommand: the group it is listed under on tlab's first
// screen, a one-line summary in plain words, and its entry point.
type command struct {
	group   string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// The groups of the first screen, in the order they are listed.
const (
	groupMeasure = "Measure"
	groupResults = "Read and compare results"
	groupLookUp  = "Look up what there is"
	groupRemote  = "Real paths and many machines"
	groupMachine = "This machine"
)

var commandGroups = []string{groupMeasure, groupResults, groupLookUp, groupRemote, groupMachine}

func commands() map[string]command {
	return map[string]command{
		"run":        {groupMeasure, "run a scenario or preset, resume one, or compare ad hoc", runRun},
		"shell":      {groupMeasure, "run your own program or a shell inside an emulated network", runShell},
		"explore":    {groupMeasure, "where does the answer change? search a range of networks", runExplore},
		"validate":   {groupMeasure, "check a scenario file without running it: cells and time", runValidate},
		"crosscheck": {groupMeasure, "check tlab's HTTP upload timings against curl's own", runCrossCheck},
		"flowsim":    {groupMeasure, "simulate QUIC flow-control windows on a link (no stacks run)", runFlowsim},
		"report":     {groupResults, "rebuild the report of a results directory", runReport},
		"stats":      {groupResults, "is A faster than B? pairwise comparisons and verdicts", runStats},
		"advise":     {groupResults, "which stack meets the application's requirements, per network", runAdvise},
		"compare":    {groupResults, "put several runs side by side in one report", runCompare},
		"serve":      {groupResults, "a live view of a run directory in the browser", runServe},
		"presets":    {groupLookUp, "the built-in scenarios, ready for tlab run NAME", runPresets},
		"profiles":   {groupLookUp, "the built-in link profiles (ethernet, wifi, 5g...), or one", runProfiles},
		"workloads":  {groupLookUp, "the workload types (traffic patterns) and their parameters", runWorkloads},
		"protocols":  {groupLookUp, "the protocols and the settings each honours", runProtocols},
		"metrics":    {groupLookUp, "every summary column and its definition", runMetrics},
		"plots":      {groupLookUp, "the plot kinds a scenario can ask for", runPlots},
		"queues":     {groupLookUp, "the queue disciplines a link can use (CoDel, FQ-CoDel...)", runQueues},
		"qoo":        {groupLookUp, "Quality of Outcome requirement profiles (LibreQoS format)", runQoO},
		"agent":      {groupRemote, "serve tlab's servers on a far machine for remote runs", runAgent},
		"record":     {groupRemote, "record the real path to an agent as a profile to replay", runRecord},
		"merge":      {groupRemote, "join the result directories of a scenario's shards", runMerge},
		"k8s":        {groupRemote, "write a Kubernetes job (or Slurm array) running shards", runK8s},
		"calibrate":  {groupMachine, "measure the emulator's own accuracy on this machine", runCalibrate},
		"cleanup":    {groupMachine, "remove what killed runs left behind", runCleanup},
		"link":       {groupMachine, "change a live run's link now (tlab link set up.loss=5%)", runLink},
		"version":    {groupMachine, "print the version (also tlab --version)", runVersion},
		"man":        {groupMachine, "print the manual page, tlab(1): every command and its flags", runMan},
		"completion": {groupMachine, "print a shell's completion script (bash, zsh, fish)", runCompletion},
	}
}

func main() {
	// When started as the emulator engine, become it and never return.
	emu.RunChildIfRequested()
	hostnoise.RunChildIfRequested()
	// When started as a CPU-limited host's server, serve and never return.
	testbed.RunServerChildIfRequested(workload.ServeProcessRequest)
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			if c, ok := commands()[args[1]]; ok {
				return c.run(context.Background(), []string{"--help"}, stdout, stderr)
			}
		}
		usage(stdout)
		return exitOK
	}
	if args[0] == completeCommand {
		return runComplete(args[1:], stdout)
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = []string{"version"}
	}
	c, ok := commands()[args[0]]
	if !ok {
		names := make([]string, 0, len(commands()))
		for n := range commands() {
			names = append(names, n)
		}
		fmt.Fprintf(stderr, "tlab: unknown command %q%s\nRun \"tlab\" for the list of commands.\n", args[0], didYouMean(args[0], names, ""))
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, args[1:], stdout, stderr)
}

// startHere is the first screen's first lines: commands that start a new
// user, each with what it does.
var startHere = [][2]string{
	{"tlab run quick", "QUIC, TCP, HTTP/3, HTTPS on LAN and 5G (2 min)"},
	{"tlab shell", "your own program in an emulated network"},
	{"tlab explore explore-quick", "QUIC or TCP as loss grows (10 min)"},
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "tlab: a transport-protocol lab: real protocol stacks between network\nnamespaces joined by an emulated link (delay, loss, rate, queue).\n\nUsage: tlab <command> [flags]\n\nStart here (as root, or see Privileges in docs/guide.md):")
	for _, s := range startHere {
		fmt.Fprintf(w, "  %-27s %s\n", s[0], s[1])
	}
	fmt.Fprintln(w, "\nCommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, g := range commandGroups {
		fmt.Fprintf(w, "  %s\n", g)
		for _, n := range names {
			if cmds[n].group == g {
				fmt.Fprintf(w, "    %-11s %s\n", n, cmds[n].summary)
			}
		}
	}
	fmt.Fprintln(w, "\nRun \"tlab <command> --help\" for a command's flags; docs/guide.md for the rest.")
}

// newFlags makes a flag set that prints its usage with a one-line synopsis
// and reports errors instead of exiting.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	return newGroupedFlags(name, synopsis, stderr, nil)
}

// flagGroup is one heading of a command's --help and the flags under it,
// in the order a reader needs them (what to run before how to tune it).
type flagGroup struct {
	title string
	names []string
}

// newGroupedFlags is newFlags for a command with many flags: its --help
// lists them under groups' headings rather than in one alphabetical list
// (run has about forty), and any flag no group names under "Other flags"
// (a test keeps that heading away from the commands that group theirs).
func newGroupedFlags(name, synopsis string, stderr io.Writer, groups []flagGroup) *flag.FlagSet {
	fs := flag.NewFlagSet("tlab "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\n\n", formatSynopsis("Usage: tlab "+synopsis, 80))
		if groups == nil {
			printFlags(stderr, fs)
			return
		}
		printFlagGroups(stderr, fs, groups)
	}
	return fs
}

// formatSynopsis fits a command's help text to width columns, so that
// the synopses can be written as prose without counting columns: the
// usage paragraph's long lines break between words, continued under the
// command's first argument; a paragraph of prose (no line indented) is
// wrapped anew; a paragraph with an indented line (examples, lists) is
// kept as written, since its lines are commands a user copies.
func formatSynopsis(s string, width int) string {
	paragraphs := strings.Split(s, "\n\n")
	for i, p := range paragraphs {
		lines := strings.Split(p, "\n")
		switch {
		case i == 0:
			var out []string
			for _, line := range lines {
				out = append(out, wrapUsageLine(line, width)...)
			}
			paragraphs[i] = strings.Join(out, "\n")
		case !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, " ") }):
			paragraphs[i] = strings.Join(wrapWords(p, width), "\n")
		}
	}
	return strings.Join(paragraphs, "\n\n")
}

// wrapUsageLine breaks a usage line ("Usage: tlab run FILE [--out DIR]",
// or a continuation indented under it) between words, each further line
// indented to where the command's first argument starts. A bracketed
// option is not split across lines.
func wrapUsageLine(line string, width int) []string {
	if len(line) <= width {
		return []string{line}
	}
	body := strings.TrimLeft(line, " ")
	lead := line[:len(line)-len(body)]
	words := usageWords(body)
	// The continuation indent: under the third word of "Usage: tlab NAME",
	// or under the line's own first word when it is itself indented.
	indent := lead
	if strings.HasPrefix(body, "Usage: ") && len(words) > 3 {
		indent = strings.Repeat(" ", len(strings.Join(words[:3], " "))+1)
	} else if lead != "" && len(words) > 2 {
		indent = strings.Repeat(" ", len(lead)+len(strings.Join(words[:2], " "))+1)
	}
	var out []string
	cur := lead
	for _, w := range words {
		switch {
		case strings.TrimSpace(cur) == "":
			cur += w
		case len(cur)+1+len(w) <= width:
			cur += " " + w
		default:
			out = append(out, cur)
			cur = indent + w
		}
	}
	return append(out, cur)
}

// usageWords splits a usage line at spaces outside brackets, so that
// "[--out DIR [--capture]]" stays one word.
func usageWords(s string) []string {
	var words []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ' ':
			if depth == 0 {
				if i > start {
					words = append(words, s[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(s) {
		words = append(words, s[start:])
	}
	return words
}

// renamedFlag keeps a renamed flag's old name working: the same value
// under the old name, left out of --help (and so of completion and the
// manual), so that scripts written for the old name still run while
// everything a user reads names one flag for one meaning.
func renamedFlag(fs *flag.FlagSet, old, name string) {
	fs.Var(fs.Lookup(name).Value, old, renamedUsage+name)
}

const renamedUsage = "the former name of --"

// printFlags lists fs's flags as the docs and the errors write them
// (--name, not the flag package's -name), each with the kind of value it
// takes and its usage wrapped to fit 80 columns, its default after it
// when it has one.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Flags:")
	fs.VisitAll(func(f *flag.Flag) { printFlag(w, f) })
}

// printFlagGroups lists fs's flags as printFlags does, under each group's
// heading in the group's order; flags no group names follow under "Other
// flags", alphabetically. A name no flag has is skipped.
func printFlagGroups(w io.Writer, fs *flag.FlagSet, groups []flagGroup) {
	listed := map[string]bool{}
	for i, g := range groups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s:\n", g.title)
		for _, name := range g.names {
			if f := fs.Lookup(name); f != nil {
				printFlag(w, f)
				listed[name] = true
			}
		}
	}
	other := false
	fs.VisitAll(func(f *flag.Flag) {
		if listed[f.Name] || strings.HasPrefix(f.Usage, renamedUsage) {
			return
		}
		if !other {
			fmt.Fprintln(w, "\nOther flags:")
			other = true
		}
		printFlag(w, f)
	})
}

// printFlag writes one flag: "  --name kind", then its usage wrapped to
// fit 80 columns with its default after it when it has one. A renamed
// flag's old name prints nothing.
func printFlag(w io.Writer, f *flag.Flag) {
	if strings.HasPrefix(f.Usage, renamedUsage) {
		return
	}
	kind, usage := flag.UnquoteUsage(f)
	head := "  --" + f.Name
	if kind != "" {
		head += " " + kind
	}
	fmt.Fprintln(w, head)
	if def := f.DefValue; def != "" && def != "0" && def != "false" && def != "0s" && def != "[]" {
		if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
			def = strconv.Quote(def) // as the flag package quotes a string's default
		}
		usage += " (default " + def + ")"
	}
	for _, line := range wrapWords(usage, 80-6) {
		fmt.Fprintln(w, "      "+line)
	}
}

// wrapWords breaks s into lines of at most width columns at spaces (a
// word longer than width stands alone on its line).
func wrapWords(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// parseArgs parses flags that may stand before, between or after
// positional arguments (Go's flag package stops at the first positional
// one) and returns the positional ones. ok is false when the command must
// stop, with code as its exit status (help asked for, or a flag error).
func parseArgs(fs *flag.FlagSet, args []string, maxPositional int) (positional []string, code int, ok bool) {
	for {
		if err := parseQuietly(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.Usage()
				return nil, exitOK, false
			}
			reportFlagError(fs, err)
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" {
			positional = append(positional, rest[1:]...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	if len(positional) > maxPositional {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), positional[maxPositional])
		fs.Usage()
		return nil, exitUsage, false
	}
	return positional, 0, true
}

// parseQuietly parses with the flag package's own printing switched off:
// on a mistake it prints the error and then the whole usage (88 lines for
// run), which buries the one line that matters.
func parseQuietly(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	defer func() { fs.SetOutput(out); fs.Usage = usage }()
	return fs.Parse(args)
}

// reportFlagError prints a flag error in one line, flags written as the
// docs write them (--name), with the nearest flag's name for an unknown
// one, and where the full list is.
func reportFlagError(fs *flag.FlagSet, err error) {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimPrefix(name, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		msg = "unknown flag --" + name + didYouMean(name, names, "--")
	} else {
		msg = strings.ReplaceAll(msg, "flag -", "flag --")
		msg = strings.ReplaceAll(msg, "argument: -", "argument: --")
	}
	fmt.Fprintf(fs.Output(), "%s: %s\nRun \"%s --help\" for every flag.\n", fs.Name(), msg, fs.Name())
}

// didYouMean suggests the candidate nearest to name, when one is within
// a third of its length in edit distance (at least 1, at most 3): a
// typo's distance, not another word's.
func didYouMean(name string, candidates []string, prefix string) string {
	best, bestDist := "", min(max(len(name)/3, 1), 3)+1
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDist || d == bestDist && c < best {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean " + prefix + best + "?"
}

// editDistance is the Levenshtein distance between a and b (insertions,
// deletions and substitutions, each costing 1).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// parseFlags parses a command that takes no positional argument.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	_, code, ok := parseArgs(fs, args, 0)
	return code, ok
}

// errorExit prints err and picks the exit code for it.
func errorExit(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "tlab: %v\n", err)
	if errors.Is(err, context.Canceled) {
		return exitCanceled
	}
	return exitError
}
