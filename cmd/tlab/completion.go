package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"tlab/internal/emu"
	"tlab/internal/proto"
	"tlab/internal/qoo"
	"tlab/internal/workload"
	"tlab/scenarios"
)

// completeCommand is the hidden command the completion scripts call:
// "tlab __complete WORD... CURRENT" prints the candidates for CURRENT,
// one per line. It is not on the first screen: users call the scripts,
// not it.
const completeCommand = "__complete"

// completionScripts are the shell scripts "tlab completion SHELL" prints.
// Each asks tlab itself for the candidates, so that commands, flags,
// presets, profiles and protocols come from the registries of the binary
// installed, never from a list written into the script.
var completionScripts = map[string]string{
	"bash": `# bash completion for tlab: add to ~/.bashrc
#   source <(tlab completion bash)
_tlab() {
  local IFS=$'\n'
  COMPREPLY=($(tlab __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
  if [[ ${#COMPREPLY[@]} -eq 0 ]]; then
    COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
  fi
}
complete -o filenames -F _tlab tlab
`,
	"zsh": `#compdef tlab
# zsh completion for tlab: add to ~/.zshrc
#   source <(tlab completion zsh)
_tlab() {
  local -a candidates
  candidates=("${(@f)$(tlab __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  if [[ -n "${candidates[1]}" ]]; then
    compadd -- "${candidates[@]}"
  else
    _files
  fi
}
compdef _tlab tlab
`,
	"fish": `# fish completion for tlab: save as ~/.config/fish/completions/tlab.fish
#   tlab completion fish > ~/.config/fish/completions/tlab.fish
complete -c tlab -f -a '(tlab __complete (commandline -opc)[2..-1] (commandline -ct))'
`,
}

func runCompletion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	shells := slices.Sorted(maps.Keys(completionScripts))
	fs := newFlags("completion", "completion SHELL\n\nPrint the completion script for SHELL ("+strings.Join(shells, ", ")+"): commands, flags, presets, link\nprofiles, protocols, queue disciplines and QoO profiles complete from this binary's registries.\n\nExamples:\n  source <(tlab completion bash)      # in ~/.bashrc\n  source <(tlab completion zsh)       # in ~/.zshrc\n  tlab completion fish > ~/.config/fish/completions/tlab.fish", stderr)
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprintf(stderr, "tlab completion: name a shell: %s\n", strings.Join(shells, ", "))
		return exitUsage
	}
	script, ok := completionScripts[pos[0]]
	if !ok {
		fmt.Fprintf(stderr, "tlab completion: unknown shell %q%s (tlab completes in %s)\n", pos[0], didYouMean(pos[0], shells, ""), strings.Join(shells, ", "))
		return exitUsage
	}
	fmt.Fprint(stdout, script)
	return exitOK
}

// runComplete prints the candidates for the last of words, one per line.
func runComplete(words []string, stdout io.Writer) int {
	for _, c := range complete(words) {
		fmt.Fprintln(stdout, c)
	}
	return exitOK
}

// complete returns the candidates for the last of words (the word under
// the cursor, maybe empty), given the words before it (the command line
// after "tlab"). Nothing means the shell's own file completion: a
// scenario file, a results directory.
func complete(words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	cmds := commands()
	if len(before) == 0 {
		return withPrefix(slices.Collect(maps.Keys(cmds)), cur)
	}
	name := before[0]
	if name == "help" {
		if len(before) == 1 {
			return withPrefix(slices.Collect(maps.Keys(cmds)), cur)
		}
		return nil
	}
	c, ok := cmds[name]
	if !ok {
		return nil
	}
	flags := commandFlags(c)
	// --flag=value in one word.
	if f, value, hasValue := strings.Cut(cur, "="); hasValue && strings.HasPrefix(f, "-") {
		var out []string
		for _, v := range flagValues(strings.TrimLeft(f, "-"), value) {
			out = append(out, f+"="+v)
		}
		return out
	}
	if strings.HasPrefix(cur, "-") {
		var names []string
		for f := range flags {
			names = append(names, "--"+f)
		}
		return withPrefix(names, cur)
	}
	// The value of the flag before, when it takes one.
	if prev := before[len(before)-1]; len(before) > 1 && strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
		if takesValue, known := flags[strings.TrimLeft(prev, "-")]; known && takesValue {
			return flagValues(strings.TrimLeft(prev, "-"), cur)
		}
	}
	return positionalValues(name, cur)
}

// flagValues completes the value of a flag whose values come from a
// registry; a comma-separated list completes its last element.
func flagValues(flag, cur string) []string {
	var names []string
	switch flag {
	case "protocols", "protocol":
		names = proto.Names()
	case "profile", "profiles":
		for _, p := range emu.BuiltinProfiles() {
			names = append(names, p.Name)
		}
	case "qoo":
		names = qoo.Builtin().IDs()
	case "workload":
		names = workload.Names()
	case "queue":
		for _, k := range emu.QdiscKinds() {
			names = append(names, k.Name)
		}
	default:
		return nil
	}
	head, last := "", cur
	if i := strings.LastIndexAny(cur, ",+"); i >= 0 {
		head, last = cur[:i+1], cur[i+1:]
	}
	var out []string
	for _, n := range withPrefix(names, last) {
		out = append(out, head+n)
	}
	return out
}

// positionalValues completes a command's argument: the presets for the
// commands that take a scenario, the profiles for tlab profiles, shells
// for tlab completion.
func positionalValues(command, cur string) []string {
	switch command {
	case "run", "validate", "explore", "k8s", "protocols":
		return withPrefix(scenarios.Names(), cur)
	case "profiles":
		return flagValues("profiles", cur)
	case "completion":
		return withPrefix(slices.Collect(maps.Keys(completionScripts)), cur)
	}
	return nil
}

// commandFlags returns a command's flags, each with whether it takes a
// value, read from the command's own --help: the flag set each command
// builds is the one source, so a flag added to a command completes with
// no list to update.
func commandFlags(c command) map[string]bool {
	var help bytes.Buffer
	c.run(context.Background(), []string{"--help"}, io.Discard, &help)
	flags := map[string]bool{}
	sc := bufio.NewScanner(&help)
	for sc.Scan() {
		// printFlags writes "  --name" for a boolean flag and
		// "  --name kind" for one that takes a value, each followed by
		// its usage, indented further.
		rest, ok := strings.CutPrefix(sc.Text(), "  --")
		if !ok {
			continue
		}
		name, kind, _ := strings.Cut(rest, " ")
		flags[name] = strings.TrimSpace(kind) != ""
	}
	return flags
}

func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
