package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
)

func runMan(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("man", "man\n\nPrint tlab(1), the manual page of every command and its flags, generated from this binary.\n\nExamples:\n  tlab man | man -l -\n  tlab man > /usr/local/share/man/man1/tlab.1", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	writeManPage(stdout)
	return exitOK
}

// writeManPage writes tlab(1) in the man(7) macros: the first screen's
// groups, then each command's own --help, so that the page says what the
// binary does and has no copy to fall behind.
func writeManPage(w io.Writer) {
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, `.TH TLAB 1 "" "tlab" "User Commands"`)
	fmt.Fprintln(w, ".SH NAME")
	fmt.Fprintln(w, `tlab \- a transport-protocol lab: which protocol stack for this application on this network, and why`)
	fmt.Fprintln(w, ".SH SYNOPSIS")
	fmt.Fprintln(w, `\fBtlab\fR \fIcommand\fR [\fIflags\fR] [\fIarguments\fR]`)
	fmt.Fprintln(w, ".SH DESCRIPTION")
	fmt.Fprintln(w, manText("tlab runs real protocol stacks (TCP, TLS, QUIC, HTTP/1.1, HTTP/2, HTTP/3, MQTT, UDP, RTP and your own) between network namespaces joined by an emulated link (delay, jitter, rate, queue, loss), drives them with applications' traffic patterns and answers which stack meets the application's requirements. Start with:"))
	for _, s := range startHere {
		fmt.Fprintf(w, ".TP\n\\fB%s\\fR\n%s\n", manText(s[0]), manText(s[1]))
	}
	fmt.Fprintln(w, ".SH COMMANDS")
	for _, g := range commandGroups {
		fmt.Fprintf(w, ".SS %s\n", manText(g))
		for _, n := range names {
			if cmds[n].group == g {
				fmt.Fprintf(w, ".TP\n\\fB%s\\fR\n%s\n", manText(n), manText(cmds[n].summary))
			}
		}
	}
	fmt.Fprintln(w, ".SH COMMAND REFERENCE")
	for _, n := range names {
		var help bytes.Buffer
		cmds[n].run(context.Background(), []string{"--help"}, io.Discard, &help)
		fmt.Fprintf(w, ".SS tlab %s\n.nf\n", manText(n))
		for _, line := range strings.Split(strings.TrimRight(help.String(), "\n"), "\n") {
			fmt.Fprintln(w, manText(line))
		}
		fmt.Fprintln(w, ".fi")
	}
	fmt.Fprintln(w, ".SH EXIT STATUS")
	for _, e := range exitMeanings {
		fmt.Fprintf(w, ".TP\n%d\n%s\n", e.code, manText(e.meaning))
	}
	fmt.Fprintln(w, ".SH FILES")
	fmt.Fprintln(w, ".TP\n/run/tlab\n"+manText("the run registry: what each live run made, so that tlab cleanup can remove what a killed run left behind."))
	fmt.Fprintln(w, ".SH SEE ALSO")
	fmt.Fprintln(w, manText("docs/guide.md (the user's guide), docs/metrics.md (every summary column), docs/presets.md (the studies' presets), docs/methodology.md (the emulator's own errors)."))
}

// manText escapes s for roff running text: a backslash is the escape
// character, and a line starting with . or ' would be a request.
func manText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	return guardLineStart(s)
}

func guardLineStart(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}
