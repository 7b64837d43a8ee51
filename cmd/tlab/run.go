package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"tlab/internal/emu"
	"tlab/internal/experiment"
	"tlab/internal/proto"
	"tlab/internal/workload"
)

// The default comparison: study A's four stacks on a LAN and on private 5G,
// in about two minutes.
const (
	defaultProtocols = "quic,tcp,h3,h1s"
	defaultProfiles  = "ethernet,5g"
)

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "run FILE|PRESET [--set key=value ...] [--out DIR]\n       tlab run --resume DIR\n       tlab run [ad-hoc flags]\n\nRun a scenario (a YAML file or a preset: see tlab presets) into a results directory with a report,\ncontinue an interrupted one, or compare protocols ad hoc with the flags below.\nWithout arguments: "+defaultProtocols+" on "+defaultProfiles+", 25 ms interval, 256 B, 12 s each (about 2 minutes).", stderr)
	var sets listFlag
	fs.Var(&sets, "set", "scenario: override a field, e.g. workload.interval=10ms (repeatable)")
	resume := fs.String("resume", "", "continue the interrupted run in DIR")
	noCal := fs.Bool("no-calibration", false, "scenario: skip the emulator calibration recorded in the manifest")
	noReport := fs.Bool("no-report", false, "scenario: do not write report.html")
	wl := fs.String("workload", "periodic", "traffic pattern (periodic: a request every --interval, open loop)")
	protocols := fs.String("protocols", defaultProtocols, "comma-separated protocols: "+strings.Join(proto.Names(), ", "))
	profiles := fs.String("profile", defaultProfiles, "comma-separated link profiles; stack overlays with + (see tlab profiles)")
	link := fs.String("link", "", "override profile fields, e.g. rate=50Mbit,up.loss=1%")
	interval := fs.Duration("interval", 25*time.Millisecond, "time between requests")
	payload := fs.Int("payload", 256, "request payload bytes")
	respSize := fs.Int("response-size", -1, "response payload bytes (default: same as --payload)")
	duration := fs.Duration("duration", 12*time.Second, "measured time per protocol and profile, after the warm-up")
	count := fs.Int("count", 0, "measured requests per cell instead of --duration")
	warmup := fs.Duration("warmup", 2*time.Second, "warm-up per cell: sent and recorded, kept out of the statistics")
	seed := fs.Uint64("seed", 1, "seed of every random decision of the emulator")
	out := fs.String("out", "", "directory for records.csv and summary.json, written as the run goes")
	capture := fs.Bool("capture", false, "with --out: pcap per host interface, TLS key log and qlog per cell")
	outliers := fs.Bool("remove-outliers", false, "drop delays beyond 3 scaled MADs from the median (study B's rule); the count is reported")
	asJSON := fs.Bool("json", false, "print the summary rows as JSON instead of a table")
	tlsVersion := fs.String("tls-version", "1.3", "TLS version over TCP: 1.3 or 1.2 (QUIC always uses 1.3)")
	kex := fs.String("kex", "x25519", "TLS key exchange: x25519, x25519mlkem768 (post-quantum hybrid, larger handshake) or p256")
	resumption := fs.Bool("resumption", true, "let new TLS/QUIC connections resume sessions")
	zeroRTT := fs.Bool("0rtt", false, "let resumed QUIC connections send 0-RTT data")
	cc := fs.String("cc", "cubic", "TCP congestion control (see /proc/sys/net/ipv4/tcp_available_congestion_control)")
	idle := fs.Duration("idle-timeout", 5*time.Second, "HTTP/1.1: close a connection idle for this long")
	maxIdle := fs.Int("h1-max-idle", 1, "HTTP/1.1: idle connections the client keeps (1: study A's one persistent connection)")
	mode := fs.String("emulator-mode", emu.ModeBusy, "emulator timer mode: busy or sleep")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) == 1 || *resume != "" {
		adhoc := []string{"workload", "protocols", "profile", "link", "interval", "payload", "response-size", "duration", "count", "warmup", "seed", "capture", "remove-outliers", "tls-version", "kex", "resumption", "0rtt", "cc", "idle-timeout", "h1-max-idle", "emulator-mode"}
		var clash []string
		fs.Visit(func(f *flag.Flag) {
			if slices.Contains(adhoc, f.Name) {
				clash = append(clash, "--"+f.Name)
			}
		})
		if len(clash) > 0 {
			fmt.Fprintf(stderr, "tlab run: %s apply to ad-hoc runs; with a scenario use --set (for example --set workload.interval=10ms)\n", strings.Join(clash, ", "))
			return exitUsage
		}
		name := ""
		if len(pos) == 1 {
			name = pos[0]
		}
		return runScenario(ctx, name, *resume, sets, *out, *noCal, *noReport, *asJSON, args, stdout, stderr)
	}
	if len(sets) > 0 {
		fmt.Fprintln(stderr, "tlab run: --set applies to a scenario; give a scenario file or preset")
		return exitUsage
	}
	if *wl != "periodic" {
		fmt.Fprintf(stderr, "tlab run: --workload %q: only periodic is available so far\n", *wl)
		return exitUsage
	}
	if *capture && *out == "" {
		fmt.Fprintln(stderr, "tlab run: --capture needs --out DIR")
		return exitUsage
	}
	if *respSize < 0 {
		*respSize = *payload
	}
	settings := proto.DefaultSettings()
	settings.TLSVersion, settings.KeyExchange, settings.Resumption, settings.ZeroRTT = *tlsVersion, *kex, *resumption, *zeroRTT
	settings.Congestion, settings.IdleTimeout, settings.MaxIdle = *cc, *idle, *maxIdle
	cmp := experiment.Comparison{
		Profiles:  splitList(*profiles),
		Link:      *link,
		Protocols: splitList(*protocols),
		Workload: workload.Periodic{
			Interval: *interval, ReqSize: *payload, RespSize: *respSize,
			Duration: *duration, Count: *count, Warmup: *warmup,
		},
		Settings: settings, Seed: *seed, RemoveOutliers: *outliers,
		OutDir: *out, Capture: *capture, EmulatorMode: *mode,
	}
	if *count > 0 {
		cmp.Workload.Duration = 0
	}
	if err := cmp.Validate(); err != nil {
		fmt.Fprintf(stderr, "tlab run: %v\n", err)
		return exitUsage
	}
	if code, handled := ensurePrivileges(append([]string{"run"}, args...), stderr); handled {
		return code
	}
	cmp.Progress = progressPrinter(stderr)
	rows, err := cmp.Run(ctx, nil)
	clearProgress(stderr)
	if len(rows) > 0 {
		if *asJSON {
			maps := make([]map[string]any, len(rows))
			for i, r := range rows {
				maps[i] = r.Fields()
			}
			writeJSON(stdout, maps)
		} else {
			printComparison(stdout, rows, cmp)
		}
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "tlab run: interrupted after %d of %d cells; everything it built is removed\n", len(rows), len(cmp.Cells()))
			return exitCanceled
		}
		return errorExit(stderr, err)
	}
	if *out != "" && !*asJSON {
		fmt.Fprintf(stdout, "\nRecords: %s/records.csv  Summary: %s/summary.json\n", *out, *out)
	}
	return exitOK
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

// progressPrinter redraws one status line on a terminal, and prints a line
// per cell otherwise (logs, CI).
func progressPrinter(w io.Writer) func(experiment.Progress) {
	tty := isTerminal(w)
	lastCell := 0
	return func(p experiment.Progress) {
		if !tty {
			if p.Cell != lastCell {
				lastCell = p.Cell
				fmt.Fprintf(w, "[%d/%d] %s over %s...\n", p.Cell, p.Cells, p.Protocol, p.Profile)
			}
			return
		}
		frac := math.Min(p.Elapsed.Seconds()/math.Max(p.Planned.Seconds(), 1e-9), 1)
		const width = 20
		bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
		left := time.Duration(float64(p.Cells-p.Cell)*p.Planned.Seconds()*1e9) + p.Planned - p.Elapsed
		fmt.Fprintf(w, "\r\033[K[%d/%d] %-22s [%s] %4.0fs/%.0fs  %5d req  last %.2f ms  ~%s left",
			p.Cell, p.Cells, p.Protocol+" / "+p.Profile, bar, p.Elapsed.Seconds(), p.Planned.Seconds(), p.Requests, p.LastDelayMs, left.Round(time.Second))
	}
}

func clearProgress(w io.Writer) {
	if isTerminal(w) {
		fmt.Fprint(w, "\r\033[K")
	}
}

func printComparison(w io.Writer, rows []experiment.Summary, cmp experiment.Comparison) {
	wl := cmp.Workload
	fmt.Fprintf(w, "Periodic requests every %v, %d B up, %d B down; seed %d; TLS %s %s; TCP %s\n\n",
		wl.Interval, wl.ReqSize, wl.RespSize, cmp.Seed, cmp.Settings.TLSVersion, cmp.Settings.KeyExchange, cmp.Settings.Congestion)
	printRows(w, rows)
}

// printRows prints summary rows as a table, a blank line between profiles.
func printRows(w io.Writer, rows []experiment.Summary) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PROFILE\tPROTOCOL\tSWEPT\tREQUESTS\tP5 ms\tP50 ms\tP95 ms\tP99 ms\tMEAN ms\tJITTER %\tB/REQ\tB/RESP\tCONN/1000\tLATE\tERRORS\tEMU p99 us\t")
	prev := ""
	for _, r := range rows {
		if prev != "" && r.Profile != prev {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t")
		}
		prev = r.Profile
		var swept []string
		for _, p := range r.Params {
			swept = append(swept, p.Value)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t\n", r.Profile, r.Protocol, strings.Join(swept, "/"), r.Requests,
			num(r.DelayP5, 2), num(r.DelayP50, 2), num(r.DelayP95, 2), num(r.DelayP99, 2), num(r.DelayMean, 2), num(r.JitterPct, 1),
			num(r.BytesPerRequest, 0), num(r.BytesPerResponse, 0), num(r.ConnsPer1000, 1), r.LateSends, r.Errors+r.Unsent, num(r.EmuReleaseP99Us, 0))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nLATE: sends more than 1 ms behind schedule (a protocol that cannot multiplex made them wait).")
	fmt.Fprintln(w, "EMU p99 us: the emulator's own release error during the cell.")
}

func num(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}
