package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/net/netutil"

	"tlab/internal/report"
)

// defaultServeAddr is loopback: a live view shows a run to this machine's
// user unless asked otherwise.
const defaultServeAddr = "127.0.0.1:8047"

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", "serve DIR [--listen ADDR]\n\nServe a live view of a run directory (running, finished, or one a shard writes): progress and time\nleft, the cells so far with their disturbance state, the answer so far and the plots, updated as cells\ncomplete. Read-only; nothing on the page comes from outside it. Stop with Ctrl-C.", stderr)
	listen := fs.String("listen", defaultServeAddr, "address to serve on (loopback unless you give another)")
	var allowHosts listFlag
	fs.Var(&allowHosts, "allow-host", "also answer requests that name the view NAME (repeatable); IP addresses and localhost always work, other names are refused (DNS rebinding)")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "tlab serve: give the run directory")
		return exitUsage
	}
	if st, err := os.Stat(pos[0]); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "tlab serve: %s is not a directory\n", pos[0])
		return exitUsage
	}
	stop, err := serveLive(*listen, pos[0], allowHosts, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tlab serve: %v\n", err)
		return exitUsage
	}
	<-ctx.Done()
	stop()
	return exitOK
}

// The live view's own bounds: connections at once, and how long a client
// may take to send a request's header, the whole request, to read an
// answer, or to stay idle. A page that reloads every few seconds needs
// one or two connections; the cap is far above that so that a few dozen
// clients sending their headers slowly (a slowloris) do not hold every
// place while a reader waits: each costs a goroutine and a few KiB, and
// is dropped when its header is not in after liveHeaderTimeout (a browser
// sends it in one packet, on loopback or a LAN in a millisecond).
const (
	liveMaxConns      = 256
	liveHeaderTimeout = 2 * time.Second
	liveReadTimeout   = 10 * time.Second
	liveWriteTimeout  = 2 * time.Minute // the first snapshot draws every plot
	liveIdleTimeout   = 30 * time.Second
)

// serveLive serves dir's live view on addr until the returned function
// is called, and says where on w. An address beyond loopback is served
// as asked, with a warning: the page has no authentication.
func serveLive(addr, dir string, allowHosts []string, w io.Writer) (stop func(), err error) {
	handler := report.LiveHandler(dir, allowHosts...)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("live view: %w", err)
	}
	host, _, _ := net.SplitHostPort(l.Addr().String())
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(w, "warning: the live view of %s is reachable beyond this machine, without authentication\n", dir)
	}
	srv := &http.Server{Handler: handler,
		ReadHeaderTimeout: liveHeaderTimeout, ReadTimeout: liveReadTimeout,
		WriteTimeout: liveWriteTimeout, IdleTimeout: liveIdleTimeout, MaxHeaderBytes: 16 << 10,
		// A client that goes away mid-answer is not news for the terminal.
		ErrorLog: log.New(io.Discard, "", 0)}
	fmt.Fprintf(w, "live view: http://%s/\n", l.Addr())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(netutil.LimitListener(l, liveMaxConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(w, "live view: %v\n", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	}, nil
}
