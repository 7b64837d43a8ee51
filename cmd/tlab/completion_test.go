package main

import (
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"tlab/internal/emu"
	"tlab/internal/proto"
	"tlab/scenarios"
)

// TestCompletionOffersEveryCommand: the first word completes to every
// command of the registry tlab dispatches on, and to nothing else (the
// hidden __complete is not a command a user types).
func TestCompletionOffersEveryCommand(t *testing.T) {
	want := slices.Sorted(maps.Keys(commands()))
	if got := complete([]string{""}); !slices.Equal(got, want) {
		t.Errorf("complete(\"\") = %v\nwant the commands %v", got, want)
	}
	if got := complete([]string{"ru"}); !slices.Equal(got, []string{"run"}) {
		t.Errorf("complete(ru) = %v, want [run]", got)
	}
	if got := complete([]string{"help", "cal"}); !slices.Equal(got, []string{"calibrate"}) {
		t.Errorf("complete(help cal) = %v, want [calibrate]", got)
	}
}

// TestCompletionReadsEachCommandsOwnFlags: flags complete from the flag
// set the command parses with, written --name as the docs write them;
// whether a flag takes a value decides what the next word completes to.
func TestCompletionReadsEachCommandsOwnFlags(t *testing.T) {
	got := complete([]string{"run", "--pro"})
	// run.go defines --profile and --protocols (and nothing else starting so).
	if !slices.Equal(got, []string{"--profile", "--protocols"}) {
		t.Errorf("complete(run --pro) = %v, want [--profile --protocols]", got)
	}
	flags := commandFlags(commands()["run"])
	if takes, ok := flags["protocols"]; !ok || !takes {
		t.Errorf("run's --protocols: known %v, takes a value %v; want both", ok, takes)
	}
	if takes, ok := flags["json"]; !ok || takes {
		t.Errorf("run's --json: known %v, takes a value %v; want a known boolean", ok, takes)
	}
	// After a boolean flag the next word is the command's argument (a
	// preset), not the flag's value.
	if got := complete([]string{"run", "--json", "quic"}); !slices.Contains(got, "quick") {
		t.Errorf("complete(run --json quic) = %v, want the preset quick", got)
	}
}

// TestCompletionValuesComeFromTheRegistries: protocols, profiles and
// presets complete from the registries tlab validates against, a
// comma-separated list element by element.
func TestCompletionValuesComeFromTheRegistries(t *testing.T) {
	var wantProtocols []string
	for _, n := range proto.Names() {
		wantProtocols = append(wantProtocols, "quic,"+n)
	}
	sort.Strings(wantProtocols)
	if got := complete([]string{"run", "--protocols", "quic,"}); !slices.Equal(got, wantProtocols) {
		t.Errorf("complete(run --protocols quic,) = %v\nwant %v", got, wantProtocols)
	}
	var wantProfiles []string
	for _, p := range emu.BuiltinProfiles() {
		if strings.HasPrefix(p.Name, "5g") {
			wantProfiles = append(wantProfiles, "--profile=wifi+"+p.Name)
		}
	}
	sort.Strings(wantProfiles)
	if got := complete([]string{"shell", "--profile=wifi+5g"}); len(wantProfiles) == 0 || !slices.Equal(got, wantProfiles) {
		t.Errorf("complete(shell --profile=wifi+5g) = %v\nwant %v", got, wantProfiles)
	}
	if got := complete([]string{"validate", ""}); !slices.Equal(got, withPrefix(scenarios.Names(), "")) {
		t.Errorf("complete(validate '') = %v\nwant every preset %v", got, scenarios.Names())
	}
	// A flag with no registry behind it leaves the word to the shell's
	// file completion.
	if got := complete([]string{"run", "--out", ""}); got != nil {
		t.Errorf("complete(run --out '') = %v, want nothing (files)", got)
	}
}

// TestBashCompletesWithTheScript sources "tlab completion bash" in a real
// bash and completes as a user pressing Tab would.
func TestBashCompletesWithTheScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bin := buildTlab(t)
	script := `source <(tlab completion bash)
COMP_WORDS=(tlab run --protocols h2,quic-d); COMP_CWORD=3; _tlab; echo "${COMPREPLY[*]}"
COMP_WORDS=(tlab calib); COMP_CWORD=1; _tlab; echo "${COMPREPLY[*]}"
complete -p tlab`
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || lines[0] != "h2,quic-dgram" || lines[1] != "calibrate" || !strings.Contains(lines[2], "-F _tlab tlab") {
		t.Errorf("bash completion printed\n%s\nwant h2,quic-dgram / calibrate / complete ... -F _tlab tlab", out)
	}
}
