package main

import (
	"bytes"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"tlab/scenarios"
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

// TestEveryCommandsHelpFitsEightyColumns: every command's help, synopsis
// and flags, prints in lines that fit an 80-column terminal, its flags as
// --name.
func TestEveryCommandsHelpFitsEightyColumns(t *testing.T) {
	for name, c := range commands() {
		var help bytes.Buffer
		c.run(t.Context(), []string{"--help"}, io.Discard, &help)
		for _, line := range strings.Split(help.String(), "\n") {
			if len(line) > 80 {
				t.Errorf("tlab %s --help: a line of %d columns: %q", name, len(line), line)
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

// TestSynopsisFitsWidth: a usage line breaks between words (never inside
// a bracketed option), continued under the command's first argument; a
// prose paragraph is wrapped anew; an indented paragraph (examples) is
// kept as written. The expected text is laid out by hand at width 30
// (the indent is 17 columns, under "[--out"; "[--seed N] FILE" there
// would end at column 32).
func TestSynopsisFitsWidth(t *testing.T) {
	in := "Usage: tlab demo [--out DIR [--capture]] [--seed N] FILE\n\n" +
		"One two three four five six seven eight nine ten\neleven.\n\n" +
		"  tlab demo --a-very-long-example-flag value stays"
	want := "Usage: tlab demo\n" +
		"                 [--out DIR [--capture]]\n" +
		"                 [--seed N]\n" +
		"                 FILE\n\n" +
		"One two three four five six\nseven eight nine ten eleven.\n\n" +
		"  tlab demo --a-very-long-example-flag value stays"
	if got := formatSynopsis(in, 30); got != want {
		t.Errorf("formatSynopsis:\n%s\nwant:\n%s", got, want)
	}
}

// TestRunHelpGroupsEveryFlag: tlab run --help lists its flags under
// headings (what to run first, the stacks' settings after), none left
// under "Other flags", and every name a group gives is one of run's flags
// (a renamed or removed flag must leave its group too).
func TestRunHelpGroupsEveryFlag(t *testing.T) {
	var help bytes.Buffer
	runRun(t.Context(), []string{"--help"}, io.Discard, &help)
	text := help.String()
	if strings.Contains(text, "Other flags:") {
		t.Errorf("tlab run --help has flags in no group:\n%s", text[strings.Index(text, "Other flags:"):])
	}
	flags := commandFlags(commands()["run"])
	for _, g := range runFlagGroups {
		if !strings.Contains(text, "\n"+g.title+":\n") {
			t.Errorf("tlab run --help lacks the heading %q", g.title)
		}
		for _, name := range g.names {
			if _, ok := flags[name]; !ok {
				t.Errorf("group %q names --%s, which tlab run does not have", g.title, name)
			}
		}
	}
	if first := strings.Index(text, "Scenario and results:"); first < 0 || first > strings.Index(text, "Ad hoc: the stacks' settings:") {
		t.Errorf("tlab run --help: the scenario's flags do not come before the stacks' settings")
	}
}

// TestRunHelpExamplesAreValid: every example in tlab run --help names
// only run's flags, presets that exist and requirements that parse, so an
// example a user copies does not fail on a name.
func TestRunHelpExamplesAreValid(t *testing.T) {
	flags := commandFlags(commands()["run"])
	_, examples, ok := strings.Cut(runSynopsis, "Examples:\n")
	if !ok {
		t.Fatal("tlab run --help has no examples")
	}
	presets := map[string]bool{}
	for _, p := range scenarios.Names() {
		presets[p] = true
	}
	for _, line := range strings.Split(examples, "\n") {
		args := strings.Fields(line)
		if len(args) < 2 || args[0] != "tlab" || args[1] != "run" {
			t.Errorf("an example that is not a tlab run command: %q", line)
			continue
		}
		for i, a := range args[2:] {
			switch {
			case strings.HasPrefix(a, "--"):
				if _, ok := flags[a[2:]]; !ok {
					t.Errorf("example %q: tlab run has no flag %s", line, a)
				}
				if a == "--require" {
					if _, err := parseRequirements([]string{args[2+i+1]}); err != nil {
						t.Errorf("example %q: %v", line, err)
					}
				}
			case i == 0 && !presets[a]:
				t.Errorf("example %q: no preset %q", line, a)
			}
		}
	}
}
