package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
)

// TestFlagsPrintAsTheDocsWriteThem: --name (as docs/guide.md and every
// error write it), the kind of value, the usage wrapped at 80 columns
// under it, and a default only where there is one. The expected text is
// written by hand: the usage of --profile is 83 columns with its default,
// so it breaks before the last word that would pass column 80.
func TestFlagsPrintAsTheDocsWriteThem(t *testing.T) {
	fs := flag.NewFlagSet("tlab demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Bool("json", false, "print JSON")
	fs.String("profile", "ethernet", "the network: a profile, a stack (wifi+loss-ge-b) or a profile `file`")
	fs.Duration("warmup", 0, "left out of the statistics")
	fs.Int("count", 3, "how many")
	var b bytes.Buffer
	printFlags(&b, fs)
	want := strings.Join([]string{
		"Flags:",
		"  --count int",
		"      how many (default 3)",
		"  --json",
		"      print JSON",
		"  --profile file",
		"      the network: a profile, a stack (wifi+loss-ge-b) or a profile file",
		`      (default "ethernet")`,
		"  --warmup duration",
		"      left out of the statistics",
		"",
	}, "\n")
	if b.String() != want {
		t.Errorf("printFlags:\n%s\nwant:\n%s", b.String(), want)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if len(line) > 80 {
			t.Errorf("a line of %d columns: %q", len(line), line)
		}
	}
}

// TestEveryCommandsHelpFitsEightyColumns: the flags of every command print
// as --name, in lines that fit an 80-column terminal.
func TestEveryCommandsHelpFitsEightyColumns(t *testing.T) {
	for name, c := range commands() {
		var help bytes.Buffer
		c.run(t.Context(), []string{"--help"}, io.Discard, &help)
		flags := false
		for _, line := range strings.Split(help.String(), "\n") {
			if line == "Flags:" {
				flags = true
			}
			if flags && len(line) > 80 {
				t.Errorf("tlab %s --help: a flag line of %d columns: %q", name, len(line), line)
			}
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") {
				t.Errorf("tlab %s --help: a flag written with one dash: %q", name, line)
			}
		}
	}
}
