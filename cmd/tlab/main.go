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
	"sort"
	"syscall"
	_ "tlab/internal/proto/all" // every protocol family registers itself

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
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

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() map[string]command {
	return map[string]command{
		"calibrate":  {"measure the emulator's own accuracy on this machine", runCalibrate},
		"crosscheck": {"does tlab agree with curl? study B's phases, tlab against real clients", runCrossCheck},
		"cleanup":    {"remove what killed runs left behind", runCleanup},
		"run":        {"run a scenario or preset, resume one, or compare protocols ad hoc", runRun},
		"explore":    {"where does the answer change? search a range of networks, cells spent where the verdict is open", runExplore},
		"validate":   {"check a scenario file without running it", runValidate},
		"report":     {"regenerate the report of a results directory", runReport},
		"compare":    {"put several runs side by side in one report", runCompare},
		"merge":      {"join the run directories of a scenario's shards", runMerge},
		"k8s":        {"write a Kubernetes Indexed Job (or a Slurm job array) running a scenario's shards", runK8s},
		"stats":      {"is A faster than B? pairwise comparisons and verdicts of a run", runStats},
		"presets":    {"list the built-in scenarios (one per study)", runPresets},
		"flowsim":    {"simulate study C's QUIC flow-control allowances", runFlowsim},
		"profiles":   {"list the built-in link profiles, or show one", runProfiles},
		"workloads":  {"list the workload types with their parameters", runWorkloads},
		"protocols":  {"list the protocols and the settings each honours", runProtocols},
		"metrics":    {"list every summary column and its definition", runMetrics},
		"plots":      {"list the plot kinds a scenario can ask for", runPlots},
		"queues":     {"list the queue disciplines a link can use (drop-tail, CoDel, FQ-CoDel, PIE, DualPI2)", runQueues},
		"version":    {"print the version", runVersion},
		"agent":      {"serve tlab's servers on a far machine for remote runs", runAgent},
		"advise":     {"which stack meets the application's requirements on each network of a run", runAdvise},
		"qoo":        {"the Quality of Outcome requirement profiles tlab ships (LibreQoS's format)", runQoO},
		"record":     {"record the real path to an agent as a link profile to replay", runRecord},
		"serve":      {"serve a live view of a run directory as its cells complete", runServe},
		"shell":      {"run your own command or a shell inside an emulated network (as mahimahi's shells)", runShell},
	}
}

func main() {
	// When started as the emulator engine, become it and never return.
	emu.RunChildIfRequested()
	hostnoise.RunChildIfRequested()
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
	c, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tlab: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "tlab: a transport-protocol lab on emulated networks.\n\nUsage:\n  tlab <command> [flags]\n\nCommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun \"tlab <command> --help\" for a command's flags.")
}

// newFlags makes a flag set that prints its usage with a one-line synopsis
// and reports errors instead of exiting.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("tlab "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: tlab %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags that may stand before, between or after
// positional arguments (Go's flag package stops at the first positional
// one) and returns the positional ones. ok is false when the command must
// stop, with code as its exit status (help asked for, or a flag error).
func parseArgs(fs *flag.FlagSet, args []string, maxPositional int) (positional []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
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
