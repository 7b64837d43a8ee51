package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestManTextEscapesRoff: roff reads a backslash as an escape and a line
// starting with . or ' as a request (groff(7)); each must print as
// written. "-" is escaped as \- so that it stays a minus sign that a
// reader can search for and copy (man-pages(7)).
func TestManTextEscapesRoff(t *testing.T) {
	cases := map[string]string{
		`a\b`:                `a\eb`,
		".TH in a help":      `\&.TH in a help`,
		"x\n'quoted line":    "x\n\\&'quoted line",
		"--protocols h1,h2":  `\-\-protocols h1,h2`,
		"plain words, no op": "plain words, no op",
	}
	for in, want := range cases {
		if got := manText(in); got != want {
			t.Errorf("manText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestManPageRendersEveryCommand renders "tlab man" with groff as man(1)
// does, warnings on: no warning, a section per command of the registry
// with its own flags, and every exit code. (-k: the help holds UTF-8,
// such as µs, which man(1) passes through preconv as -k does.)
func TestManPageRendersEveryCommand(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("no groff (Debian: groff-base, which man-db depends on)")
	}
	code, page, errs := run("man")
	if code != exitOK {
		t.Fatalf("tlab man: exit %d: %s", code, errs)
	}
	cmd := exec.Command("groff", "-k", "-man", "-Tutf8", "-ww", "-P", "-cbou")
	cmd.Stdin = strings.NewReader(page)
	var out, warn bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &warn
	if err := cmd.Run(); err != nil || warn.Len() > 0 {
		t.Fatalf("groff: %v\n%s", err, warn.String())
	}
	text := out.String()
	for name := range commands() {
		if !strings.Contains(text, "\n   tlab "+name+"\n") {
			t.Errorf("no section for tlab %s", name)
		}
	}
	for _, flag := range []string{"--protocols", "--allow-commands", "--budget"} {
		if !strings.Contains(text, "  "+flag) {
			t.Errorf("the page lacks the flag %s", flag)
		}
	}
	for _, e := range exitMeanings {
		if !strings.Contains(text, fmt.Sprintf("\n       %d", e.code)) {
			t.Errorf("EXIT STATUS lacks %d", e.code)
		}
	}
}
