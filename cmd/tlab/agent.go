package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"tlab/internal/remote"
	"tlab/internal/units"
)

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("agent", "agent [--listen ADDR] [--token-file FILE]\n\nServe tlab's own servers for the controller that pairs with this machine: run it on the far\nmachine, then tlab run ... --remote THIS_HOST:PORT --token-file FILE on the near one. The first\nconnection pairs with the one-time token printed here (and written to --token-file); later ones\nare recognised by their identity (mutual TLS). See docs/guide.md, \"Across a real network\".", stderr)
	listen := fs.String("listen", fmt.Sprintf(":%d", remote.DefaultPort), "address of the control channel (TCP)")
	tokenFile := fs.String("token-file", "", "also write the pairing (the agent's fingerprint and the one-time token) to FILE, mode 0600")
	state := fs.String("state", "", "directory of the agent's identity and paired controllers (default $TLAB_STATE_DIR or ~/.config/tlab)")
	noToken := fs.Bool("no-token", false, "make no pairing token: only controllers paired before may connect")
	limits := remote.DefaultLimits()
	fs.IntVar(&limits.MaxServers, "max-servers", limits.MaxServers, "servers one controller may run at once")
	fs.IntVar(&limits.MinPort, "min-port", limits.MinPort, "lowest port a server may bind")
	fs.IntVar(&limits.MaxPort, "max-port", limits.MaxPort, "highest port a server may bind")
	maxLoad := fs.String("max-load", fmt.Sprintf("%dMbit", limits.MaxLoadMbps), "most load this agent sends the controller, all of it together: loaded recordings' fills (tlab record) and cross traffic's down flows, across sessions (0: none; else whole Mbit/s)")
	fs.IntVar(&limits.MaxLoadS, "max-load-time", limits.MaxLoadS, "longest such load, seconds")
	idle := fs.Duration("session-idle", time.Duration(limits.IdleS)*time.Second, "end a session whose controller is silent this long, stopping its servers")
	renamedFlag(fs, "idle", "session-idle")
	maxSession := fs.Duration("max-session", time.Duration(limits.MaxSessionS)*time.Second, "end any session after this long")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if _, port, err := net.SplitHostPort(*listen); err != nil || !validPort(port) {
		fmt.Fprintf(stderr, "tlab agent: --listen %q: want [HOST]:PORT, such as :%d or 192.0.2.7:%d\n", *listen, remote.DefaultPort, remote.DefaultPort)
		return exitUsage
	}
	limits.IdleS, limits.MaxSessionS = max(int(idle.Seconds()), 1), max(int(maxSession.Seconds()), 1)
	ml, err := units.ParseBitrate(*maxLoad)
	// The limit is whole Mbit/s: a rate between 0 and 1 Mbit/s would be
	// taken as 0 and silently refuse every load.
	if err != nil || ml < 0 || (ml > 0 && ml < 1e6) {
		fmt.Fprintf(stderr, "tlab agent: --max-load %q: want a rate of at least 1Mbit, such as 50Mbit, or 0 for none\n", *maxLoad)
		return exitUsage
	}
	limits.MaxLoadMbps = int(float64(ml) / 1e6)
	a, pairing, ln, err := remote.PrepareAgent(remote.AgentOptions{Listen: *listen, StateDir: *state, NoToken: *noToken, Limits: limits, Log: stderr})
	if err != nil {
		return errorExit(stderr, err)
	}
	// The pairing file is written before anything is printed: a script
	// (or a test) that starts the controller as soon as the agent says it
	// listens must find the file there.
	if pairing.Token != "" && *tokenFile != "" {
		// A new file renamed into place: a link at the path is
		// replaced, not followed, and an old file's looser mode
		// does not carry over to the live token.
		if err := remote.WritePrivateFile(*tokenFile, pairing.Marshal()); err != nil {
			ln.Close()
			return errorExit(stderr, err)
		}
	}
	fmt.Fprintf(stdout, "tlab agent listening on %s\nidentity %s\n", ln.Addr(), pairing.Agent)
	if pairing.Token != "" {
		fmt.Fprintf(stdout, "pairing token %s (one time)\n", pairing.Token)
		if *tokenFile != "" {
			fmt.Fprintf(stdout, "pairing written to %s: copy it to the controller and run\n  tlab run FILE|PRESET --remote THIS_HOST:%d --token-file %s\n", *tokenFile, remote.DefaultPort, *tokenFile)
		}
	}
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	if err := a.Serve(ctx, ln); err != nil {
		return errorExit(stderr, err)
	}
	return exitOK
}

// validPort says whether text is a TCP port number (0: any free port).
func validPort(text string) bool {
	n, err := strconv.Atoi(text)
	return err == nil && n >= 0 && n <= 65535
}
