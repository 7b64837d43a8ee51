package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"tlab/internal/emu"
	"tlab/internal/experiment"
	"tlab/internal/invoker"
	"tlab/internal/units"
)

const shellSynopsis = `shell [--profile P] [--link k=v,...] [--queue Q] [--seed N] [--cross k=v ...] [--server CMD] [--out DIR [--capture]] [--scenario FILE] [-- COMMAND [ARG ...]]

Run a command, or an interactive shell, inside one of tlab's emulated networks: the command runs in
the client's host, --server's in the server's host for the shell's life, and both directions of the
link are impaired as the profile says (any profile or stack of profiles, a recorded path
./mypath.yaml, a rate trace, a queue discipline, cross traffic). The server's address is in
$TLAB_SERVER, the client's in $TLAB_CLIENT. On exit tlab says what the link did (packets, bytes,
drops by cause, ECN marks, the queue's sojourn percentiles, the emulator's release error, the
host's noise) on standard error, and exits with the command's status. As root through sudo, doas
or pkexec, the commands run as the invoking user (--as-root keeps root); as root without one, a
warning says they run as root.

Examples:
  tlab shell --profile 5g --server 'iperf3 -s' -- \
      sh -c 'iperf3 -c "$TLAB_SERVER"'
  tlab shell --profile wifi --link up.loss=1% --server 'irtt server' -- \
      sh -c 'irtt client -d 10s "$TLAB_SERVER"'

The single quotes matter: $TLAB_SERVER is set inside the network, so sh -c
there expands it, not your shell.`

func runShell(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("shell", shellSynopsis, stderr)
	profile := fs.String("profile", "ethernet", "the network: a profile, a stack (wifi+loss-ge-b) or a profile file (tlab profiles)")
	link := fs.String("link", "", "field overrides, such as rate=50Mbit,up.loss=1% (as tlab run --link)")
	queue := fs.String("queue", "", "the links' queue discipline: "+strings.Join(emu.QdiscNames(), ", ")+" (tlab queues)")
	seed := fs.Uint64("seed", 1, "the emulator's seed: the same seed, the same loss and jitter pattern")
	var cross, sets listFlag
	fs.Var(&cross, "cross", "traffic beside the commands: a field of a scenario's cross: section as k=v, such as flows=2 or udp_rate=5Mbit (repeatable)")
	fs.Var(&sets, "set", "override a field of the network's scenario, such as emulator.engine=mmsg (repeatable)")
	scenarioFile := fs.String("scenario", "", "take the network from a scenario file: its topology, first profile, link, emulator and cross traffic")
	server := fs.String("server", "", "a command run by /bin/sh in the server's host for the shell's life")
	serverWait := fs.Duration("server-wait", 500*time.Millisecond, "how long the server gets to start listening before the command starts")
	out := fs.String("out", "", "keep the account (shell.json) and the server's output (server.log) in DIR")
	capture := fs.Bool("capture", false, "with --out: a pcap per host interface in DIR/captures")
	asJSON := fs.Bool("json", false, "write the account as JSON (on standard error, as the text account)")
	asRoot := fs.Bool("as-root", false, "run the commands as root even when tlab was started through sudo")

	flags, command := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		flags, command = args[:i], args[i+1:]
	}
	// Positional words are allowed here only to say where they belong.
	pos, code, ok := parseArgs(fs, flags, 64)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "tlab shell: %q: put the command after --, as tlab shell --profile 5g -- sh -c 'ping -c 3 \"$TLAB_SERVER\"'\n", pos[0])
		return exitUsage
	}
	if *capture && *out == "" {
		fmt.Fprintln(stderr, "tlab shell: --capture keeps its pcaps in --out DIR: give one")
		return exitUsage
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	sc, err := experiment.ShellScenario(experiment.ShellNetwork{File: *scenarioFile, Profile: *profile, ProfileGiven: given["profile"],
		Link: *link, Queue: *queue, Seed: *seed, SeedGiven: given["seed"], Cross: cross, Sets: sets})
	if err != nil {
		fmt.Fprintf(stderr, "tlab shell: %v\n", err)
		return exitUsage
	}
	if code, handled := ensurePrivileges(append([]string{"shell"}, args...), stderr); handled {
		return code
	}
	sh := experiment.Shell{Scenario: sc, Server: *server, ServerWait: *serverWait, Command: command, Out: *out, Capture: *capture,
		Stdin: os.Stdin, Stdout: stdout, Stderr: stderr}
	if !*asRoot {
		as := invoker.Find()
		if as.Warning != "" {
			fmt.Fprintf(stderr, "warning: %s (the server, the command or the shell; --as-root says you mean it)\n", as.Warning)
		}
		sh.Credential, sh.UserEnv = as.Cred, as.Env
	}
	if len(command) == 0 {
		sh.Ready = func(env experiment.ShellEnv) {
			fmt.Fprintf(stderr, "tlab shell: a shell in the client's host on %s; the server is at $TLAB_SERVER (%s). Exit it to end.\n", sc.Profiles[0], env["TLAB_SERVER"])
		}
	}
	acct, err := sh.Run(ctx)
	switch {
	case acct == nil && err != nil:
		return errorExit(stderr, err)
	case *asJSON:
		enc := json.NewEncoder(stderr)
		enc.SetIndent("", "  ")
		if err := enc.Encode(acct); err != nil {
			return errorExit(stderr, err)
		}
	default:
		printShellAccount(stderr, acct)
	}
	if errors.Is(err, context.Canceled) {
		return exitCanceled
	}
	if err != nil {
		return errorExit(stderr, err)
	}
	return acct.ExitStatus
}

// printShellAccount writes what the link did, one row per link direction.
func printShellAccount(w io.Writer, a *experiment.ShellAccount) {
	what := "the shell"
	if len(a.Command) > 0 {
		what = "the command"
	}
	fmt.Fprintf(w, "\ntlab shell: %s exited %d after %.1f s on %s (seed %d)\n", what, a.ExitStatus, a.DurationS, a.Network, a.Seed)
	if a.ServerEnded != "" {
		fmt.Fprintf(w, "warning: the server ended before the command did (%s)\n", a.ServerEnded)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "LINK\tWAY\tPACKETS\tBYTES\tDELIVERED\tDROPS\tECN\tQUEUE P50 ms\tP99 ms\tMAX ms\t")
	ms := func(v float64) string {
		if v != v {
			return "-"
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	for _, l := range a.Links {
		for _, d := range []struct {
			way string
			s   experiment.ShellDirection
		}{{"up", l.Up}, {"down", l.Down}} {
			var drops []string
			total := uint64(0)
			for _, cause := range []string{"loss", "queue", "outage", "oversize", "tx_error", "wifi_retries"} {
				if n := d.s.Drops[cause]; n > 0 {
					drops = append(drops, fmt.Sprintf("%s %d", cause, n))
					total += n
				}
			}
			dropText := "0"
			if total > 0 {
				dropText = fmt.Sprintf("%d (%s)", total, strings.Join(drops, ", "))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t\n", l.Name, d.way, d.s.Packets, units.Size(int64(d.s.Bytes)), d.s.Delivered, dropText, d.s.ECNMarked,
				ms(d.s.QueueP50Ms), ms(d.s.QueueP99Ms), ms(d.s.QueueMaxMs))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "the emulator's release error: p50 %.1f us, p99 %.1f us, max %.1f us over %d frames; the host: %.1f %% of CPU time stolen, wake-up p99 %.2f ms\n",
		a.Release.P50, a.Release.P99, a.Release.Max, a.Release.N, a.Host.StealPct, a.Host.WakeP99Us/1000)
}
