package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"tlab/internal/pathrec"
	"tlab/internal/remote"
)

func runRecord(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("record", "record --remote HOST:PORT [--token-file FILE] [--duration 60s] --out PROFILE.yaml\n\nRecord the real path to a tlab agent (round trip, each direction's delay variation, loss and its\nbursts, rate over time) and write a link profile that tlab run --profile PROFILE.yaml replays.", stderr)
	addr := fs.String("remote", "", "the agent at HOST:PORT")
	tokenFile := fs.String("token-file", "", "the agent's pairing file (tlab agent --token-file), needed the first time")
	state := fs.String("state", "", "the controller's identity and known agents (default $TLAB_STATE_DIR or ~/.config/tlab)")
	duration := fs.Duration("duration", time.Minute, "how long to probe")
	rate := fs.Int("rate", 100, "probes per second")
	out := fs.String("out", "", "the profile to write (traces go beside it)")
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
	fmt.Fprintf(stderr, "recording the path to %s for %v...\n", *addr, *duration)
	fit, files, err := pathrec.RecordTo(ctx, *addr, remote.DialOptions{StateDir: target.StateDir, Pairing: target.Pairing}, pathrec.Options{Duration: *duration, Rate: *rate}, *out)
	if err != nil {
		return errorExit(stderr, err)
	}
	fmt.Fprintf(stdout, "round trip %.2f ms (median %.2f) over %d probes\n", fit.RTTMinMs, fit.RTTMedianMs, fit.Probes)
	for _, d := range []struct {
		name string
		d    pathrec.Direction
	}{{"up", fit.Up}, {"down", fit.Down}} {
		fmt.Fprintf(stdout, "%-4s delay %.2f ms, jitter %.2f ms, loss %.2f %% (mean burst %.1f), rate %.1f Mbit/s\n", d.name, d.d.DelayMs, d.d.JitterMs, d.d.LossPct, d.d.MeanBurst, d.d.RateBps/1e6)
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "wrote %s\n", f)
	}
	fmt.Fprintf(stdout, "replay it: tlab run FILE|PRESET --profile %s\n", files[0])
	return exitOK
}
