package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestVersionFlag: --version is what users of every other tool type first;
// it prints what tlab version prints.
func TestVersionFlag(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		code, out, errs := run(args...)
		if code != exitOK || !strings.HasPrefix(out, "tlab ") {
			t.Errorf("tlab %s: exit %d, stdout %q, stderr %q; want exit 0 and \"tlab VERSION ...\"", strings.Join(args, " "), code, out, errs)
		}
	}
}

// TestFirstScreenStartsAUser: tlab alone starts with three commands to
// try, then lists every registered command once, in groups, each line
// within 80 columns and with a description in plain words (no study's
// private name such as "study B's phases").
func TestFirstScreenStartsAUser(t *testing.T) {
	code, out, _ := run()
	if code != exitOK {
		t.Fatalf("tlab: exit %d", code)
	}
	start := strings.Index(out, "Start here")
	cmdsAt := strings.Index(out, "Commands")
	if start < 0 || cmdsAt < start {
		t.Fatalf("no \"Start here\" before the commands:\n%s", out)
	}
	for _, first := range []string{"tlab run quick", "tlab shell", "tlab explore explore-quick"} {
		if !strings.Contains(out[start:cmdsAt], first) {
			t.Errorf("Start here lacks %q:\n%s", first, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 80 {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	listing := out[cmdsAt:]
	for name, c := range commands() {
		lines := regexp.MustCompile(`(?m)^    `+regexp.QuoteMeta(name)+` +\S`).FindAllString(listing, -1)
		if len(lines) != 1 {
			t.Errorf("command %s is listed %d times, want once", name, len(lines))
		}
		if c.group == "" || !strings.Contains(listing, c.group) {
			t.Errorf("command %s: group %q is not a heading of the listing", name, c.group)
		}
		if regexp.MustCompile(`(?i)\bstudy [a-e]\b`).MatchString(c.summary) {
			t.Errorf("command %s: %q names a study privately", name, c.summary)
		}
	}
}

// TestEveryCommandsHelpSaysWhatItDoes: between the usage line and the
// flags, every command's --help has a sentence (calibrate, profiles and
// cleanup had none).
func TestEveryCommandsHelpSaysWhatItDoes(t *testing.T) {
	for name := range commands() {
		_, _, errs := run(name, "--help")
		body := errs
		if i := strings.Index(body, "\n  -"); i >= 0 {
			body = body[:i]
		}
		parts := strings.SplitN(body, "\n\n", 3)
		if len(parts) < 2 || len(strings.TrimSpace(parts[1])) < 20 {
			t.Errorf("tlab %s --help has no description:\n%s", name, errs)
		}
	}
}

// TestRunWithoutArgumentsPrintsUsage: tlab run alone used to start a
// two-minute root run at once; it prints its usage with an example and
// exits 2 without starting anything.
func TestRunWithoutArgumentsPrintsUsage(t *testing.T) {
	began := time.Now()
	code, out, errs := run("run")
	if code != exitUsage || !strings.Contains(errs, "tlab run quick") || out != "" {
		t.Errorf("tlab run: exit %d, stdout %q, stderr %q; want exit 2 and an example on stderr", code, out, errs)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("tlab run took %v: it ran something", took)
	}
}
