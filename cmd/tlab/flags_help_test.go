package main

import (
	"bytes"
	"flag"
	"io"
	"slices"
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

// TestRenamedFlagsKeepTheirOldNames: a flag renamed so that one name has
// one meaning (record's --rate was probes per second where every other
// --rate is a link rate) still takes its old name, which sets the same
// value, and is left out of --help and completion.
func TestRenamedFlagsKeepTheirOldNames(t *testing.T) {
	fs := flag.NewFlagSet("tlab demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rate := fs.Int("probe-rate", 100, "probes per second")
	renamedFlag(fs, "rate", "probe-rate")
	if err := fs.Parse([]string{"--rate", "250"}); err != nil || *rate != 250 {
		t.Fatalf("--rate 250: err %v, --probe-rate %d; want 250", err, *rate)
	}
	var b bytes.Buffer
	printFlags(&b, fs)
	if strings.Contains(b.String(), "--rate") || !strings.Contains(b.String(), "--probe-rate int") {
		t.Errorf("help lists the old name or lacks the new:\n%s", b.String())
	}
	for cmd, old := range map[string]string{"record": "--rate", "calibrate": "--mode", "agent": "--idle"} {
		if got := complete([]string{cmd, old}); slices.Contains(got, old) {
			t.Errorf("completion offers %s's old name %s: %v", cmd, old, got)
		}
		if flags := commandFlags(commands()[cmd]); len(flags) == 0 {
			t.Errorf("%s has no flags in its help", cmd)
		}
	}
}
