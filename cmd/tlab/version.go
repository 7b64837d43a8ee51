package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "version\n\nPrint tlab's version, the commit it was built from and the Go version (also tlab --version).", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	v, rev := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	fmt.Fprintf(stdout, "tlab %s %s %s\n", v, rev, runtime.Version())
	return exitOK
}
