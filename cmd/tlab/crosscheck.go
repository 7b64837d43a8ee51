package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"tlab/internal/emu"
	"tlab/internal/experiment"
	"tlab/internal/proto"
	"tlab/internal/units"
)

// crossCheckable are the protocols crosscheck has a real client for (curl
// for HTTP/1.1, libcurl for h2 and h3): checked before anything runs, so
// that a typo is a usage error.
var crossCheckable = []string{"h1", "h1s", "h2", "h3"}

func runCrossCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("crosscheck", "crosscheck [--protocols h1,h1s,h2,h3] [--profile P] [--link key=value,...] [--count N] [--size B] [--json]\n\nDoes tlab agree with curl? Time study B's requests (a POST on a fresh connection, every phase as\ncurl's -w variables) with tlab's clients and with real ones on the same emulated link, alternating:\nDebian's curl for h1 and h1s, libcurl with HTTP/2 and HTTP/3 (curl_cffi) for h2 and h3. Each phase's medians are\ncompared; a difference above 1 ms + 10 % of curl's value fails (docs/presets.md says why).\nExit 0 all agree, 1 some differ, 3 cannot run.", stderr)
	protocols := fs.String("protocols", "h1,h1s,h2,h3", "protocols to check: h1, h1s, h2, h3")
	profile := fs.String("profile", "ethernet", "link profile (stack), see tlab profiles")
	link := fs.String("link", "rtt=10ms", "override profile fields, e.g. rtt=25ms,rate=20Mbit")
	count := fs.Int("count", 20, "requests per client and protocol")
	size := fs.String("size", "3.5KB", "upload body size")
	tlsVersion := fs.String("tls-version", "1.3", "TLS version over TCP: 1.3 or 1.2")
	seed := fs.Uint64("seed", 1, "emulator seed")
	asJSON := fs.Bool("json", false, "print the comparison as JSON")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	sz, err := units.ParseSize(*size)
	if err != nil || *count < 3 {
		fmt.Fprintf(stderr, "tlab crosscheck: %v\n", errors.Join(err, map[bool]error{true: errors.New("--count: at least 3 requests")}[*count < 3]))
		return exitUsage
	}
	for _, p := range splitList(*protocols) {
		if !slices.Contains(crossCheckable, p) {
			fmt.Fprintf(stderr, "tlab crosscheck: --protocols %s: no real client to check it against; want some of %s\n", p, strings.Join(crossCheckable, ", "))
			return exitUsage
		}
	}
	ov, err := emu.ParseOverrides(*link)
	if err == nil {
		var cfg emu.LinkConfig
		if cfg, _, err = emu.ResolveLink(*profile, ov); err == nil {
			settings := proto.DefaultSettings()
			settings.TLSVersion = *tlsVersion
			if err = settings.Validate(); err == nil {
				cc := experiment.CrossCheck{Protocols: splitList(*protocols), Link: cfg, Count: *count, Size: int(sz), Settings: settings, Seed: *seed,
					Progress: func(p string) { fmt.Fprintf(stderr, "checking %s (%d requests each, alternating)...\n", p, *count) }}
				return crossCheck(ctx, cc, *asJSON, args, stdout, stderr)
			}
		}
	}
	fmt.Fprintf(stderr, "tlab crosscheck: %v\n", err)
	return exitUsage
}

func crossCheck(ctx context.Context, cc experiment.CrossCheck, asJSON bool, args []string, stdout, stderr io.Writer) int {
	if code, handled := ensurePrivileges(append([]string{"crosscheck"}, args...), stderr); handled {
		return code
	}
	t0 := time.Now()
	checks, err := cc.Run(ctx)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return exitCanceled
		}
		fmt.Fprintf(stderr, "tlab crosscheck: %v\n", err)
		return exitError
	}
	failed := 0
	for _, c := range checks {
		if !c.Pass {
			failed++
		}
	}
	if asJSON {
		writeJSON(stdout, checks)
	} else {
		fmt.Fprintf(stdout, "Study B's request (POST of %d B on a fresh connection), tlab against a real client, medians of %d requests each, %.0f s\n\n", cc.Size, cc.Count, time.Since(t0).Seconds())
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "PROTOCOL\tCLIENT\tPHASE\tTLAB ms\tCLIENT ms\tDIFF ms\tTOLERANCE ms\tRESULT\t")
		for _, c := range checks {
			res := "agree"
			if !c.Pass {
				res = "DIFFER"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%+.2f\t%.2f\t%s\t\n", c.Protocol, c.Client, c.Phase, c.TlabMs, c.ExternalMs, c.DiffMs, c.ToleranceMs, res)
		}
		tw.Flush()
		fmt.Fprintf(stdout, "\nTimes from the request's start, as curl's -w variables; tolerance 1 ms + 10 %% of the client's value.\n")
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "tlab crosscheck: %d of %d phases differ beyond the tolerance\n", failed, len(checks))
		return exitFailure
	}
	return exitOK
}
