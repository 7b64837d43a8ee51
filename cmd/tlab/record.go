package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"tlab/internal/pathrec"
	"tlab/internal/remote"
	"tlab/internal/units"
)

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("record", "record --remote HOST:PORT [--token-file FILE] [--duration 60s] [--load=false] --out PROFILE.yaml\n\nRecord the real path to a tlab agent (round trip, each direction's delay variation, loss and its\nbursts, rate over time) and write a link profile that tlab run --profile PROFILE.yaml replays.\nThen, unless --load=false, load each direction in turn for a few seconds (bounded by --load-rate\nand the agent's --max-load) to find its buffer, its discipline and ECN marks.", stderr)
	addr := fs.String("remote", "", "the agent at HOST:PORT")
	tokenFile := fs.String("token-file", "", "the agent's pairing file (tlab agent --token-file), needed the first time")
	state := fs.String("state", "", "the controller's identity and known agents (default $TLAB_STATE_DIR or ~/.config/tlab)")
	duration := fs.Duration("duration", time.Minute, "how long to probe")
	rate := fs.Int("probe-rate", 100, "probes per second (not a link rate: see --load-rate)")
	renamedFlag(fs, "rate", "probe-rate")
	out := fs.String("out", "", "the profile to write (traces go beside it)")
	load := fs.Bool("load", true, "after the recording at rest, load each direction in turn to find its buffer (fills the path: --load=false skips it)")
	loadFor := fs.Duration("load-for", 3*time.Second, "how long each direction is loaded")
	loadRate := fs.String("load-rate", "50Mbit", "the most load sent each way (1.5 times the rate measured, up to this; the agent's --max-load bounds the way back)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *addr == "" || *out == "" {
		fmt.Fprintln(stderr, "tlab record: give --remote HOST:PORT and --out PROFILE.yaml")
		return exitUsage
	}
	target, err := remoteTarget(*addr, *tokenFile, *state)
	if err != nil {
		fmt.Fprintf(stderr, "tlab record: %v\n", err)
		return exitUsage
	}
	lr, err := units.ParseBitrate(*loadRate)
	if err != nil || lr <= 0 || *loadFor <= 0 || *loadFor > time.Minute {
		fmt.Fprintf(stderr, "tlab record: --load-rate %q and --load-for %v: want a positive rate and up to a minute\n", *loadRate, *loadFor)
		return exitUsage
	}
	opts := pathrec.Options{Duration: *duration, Rate: *rate, Load: *load, LoadFor: *loadFor, LoadRateBps: float64(lr)}
	fmt.Fprintf(stderr, "recording the path to %s for %v...\n", *addr, *duration)
	if extra, maxBps := opts.LoadPlan(); extra > 0 {
		fmt.Fprintf(stderr, "then loading it, one direction at a time, for %v each at up to %s (1.5 times the rate measured): %v more; --load=false skips this\n",
			*loadFor, units.Bitrate(maxBps), extra)
	}
	fit, files, err := pathrec.RecordTo(ctx, *addr, remote.DialOptions{StateDir: target.StateDir, Pairing: target.Pairing}, opts, *out)
	if err != nil {
		return errorExit(stderr, err)
	}
	fmt.Fprintf(stdout, "round trip %.2f ms (median %.2f) over %d probes\n", fit.RTTMinMs, fit.RTTMedianMs, fit.Probes)
	for _, d := range []struct {
		name string
		d    pathrec.Direction
	}{{"up", fit.Up}, {"down", fit.Down}} {
		outages := ""
		if d.d.Outages > 0 {
			outages = fmt.Sprintf(", %d outages of %v every %v on average", d.d.Outages, d.d.MeanOutage.Round(time.Millisecond), (d.d.MeanOutage + d.d.MeanBetween).Round(time.Millisecond))
		}
		fmt.Fprintf(stdout, "%-4s delay %.2f ms, jitter %.2f ms, loss %.2f %% (mean burst %.1f)%s, rate %.1f Mbit/s\n", d.name, d.d.DelayMs, d.d.JitterMs, d.d.LossPct, d.d.MeanBurst, outages, d.d.RateBps/1e6)
	}
	for _, line := range fit.LoadSummary() {
		fmt.Fprintln(stdout, line)
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "wrote %s\n", f)
	}
	fmt.Fprintf(stdout, "replay it: tlab run FILE|PRESET --profile %s\n", files[0])
	return exitOK
}
