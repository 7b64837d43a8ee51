package experiment

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"tlab/internal/cellrun"

	"go.yaml.in/yaml/v3"

	"tlab/internal/scenario"
	"tlab/scenarios"
)

// stackSets give any scenario a stack of its own, given as commands.
var stackSets = []string{"protocols=[tcp, mine]", "stacks={mine: {client: touch /tmp/pwned}}"}

// TestCommandsNeedPermissionUnlessAPreset: the commands of a scenario's own
// stacks run without asking when tlab or the user at its command line
// wrote them (a preset, with or without --set; an in-memory scenario),
// and only with AllowCommands when they come from a file or a resumed run
// directory, whose scenario.yaml may have come from anyone. The refusal
// is an input error (exit 2) that shows the commands and the flag.
func TestCommandsNeedPermissionUnlessAPreset(t *testing.T) {
	preset, err := LoadScenario("quick", stackSets)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := scenarios.Read("quick")
	file := filepath.Join(t.TempDir(), "quick.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := scenario.Load(file, stackSets...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		run     Run
		sc      *scenario.Scenario
		refused bool
	}{
		{"preset", Run{NameOrFile: "quick", Sets: stackSets}, preset, false},
		{"in memory", Run{Scenario: fromFile}, fromFile, false},
		{"file", Run{NameOrFile: file, Sets: stackSets}, fromFile, true},
		{"file, allowed", Run{NameOrFile: file, Sets: stackSets, AllowCommands: true}, fromFile, false},
		{"resume", Run{Resume: "received"}, preset, true},
		{"resume, allowed", Run{Resume: "received", AllowCommands: true}, preset, false},
	} {
		err := c.run.checkCommands(c.sc)
		if refused := err != nil; refused != c.refused {
			t.Errorf("%s: refused %v (%v), want %v", c.name, refused, err, c.refused)
			continue
		}
		if err != nil && (!errors.Is(cellrun.InputErr(err), cellrun.ErrInput) || !errors.Is(err, ErrCommandsNotAllowed) ||
			!strings.Contains(err.Error(), "touch /tmp/pwned") || !strings.Contains(err.Error(), "--allow-commands")) {
			t.Errorf("%s: %v, want an input error showing the command and the flag", c.name, err)
		}
	}
	// A file named as a preset is what LoadScenario reads, and it is a
	// file: it asks.
	t.Run("a file named quick", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "quick"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		if err := (Run{NameOrFile: "quick", Sets: stackSets}).checkCommands(fromFile); !errors.Is(err, ErrCommandsNotAllowed) {
			t.Errorf("./quick, a file: %v, want it refused", err)
		}
	})
	// A preset of tlab's own never needs the flag: none names commands
	// today, and one that did would run without asking (above).
	for _, name := range scenarios.Names() {
		data, _ := scenarios.Read(name)
		var top map[string]any
		if yaml.Unmarshal(data, &top) != nil || top["stacks"] == nil {
			continue // a suite, or no commands (parsing every preset costs seconds)
		}
		if sc, err := LoadScenario(name, nil); err == nil {
			if err := (Run{NameOrFile: name}).checkCommands(sc); err != nil {
				t.Errorf("preset %s: %v", name, err)
			}
		}
	}
}

// TestShellPromptRunsNoCodeFromTheNetworkName: tlab shell's interactive
// shell names the network in its prompt, and a profile file's name is
// someone else's text: one holding $(...), `...`, quotes and a backslash
// runs nothing, under bash (through its rc file) or under sh (dash expands
// $PS1), and the prompt still names the network.
func TestShellPromptRunsNoCodeFromTheNetworkName(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "x")
	network := "./my$(touch " + mark + ")`touch " + mark + "`\"'\\" + `"; touch ` + mark + `; ".yaml`
	shells := []string{"/bin/sh"}
	if bash, err := exec.LookPath("bash"); err == nil {
		shells = append(shells, bash)
	}
	for _, shell := range shells {
		t.Setenv("SHELL", shell)
		t.Setenv("HOME", dir) // no ~/.bashrc of the machine's
		cmd, cleanup, err := (Shell{}).clientCommand(ShellEnv{"TLAB_NETWORK": network}, network)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = strings.NewReader("echo done\nexit\n")
		out, err := cmd.CombinedOutput()
		cleanup()
		if err != nil {
			t.Errorf("%s: %v\n%s", shell, err, out)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Errorf("%s: the prompt ran code from the network's name: %s exists", shell, mark)
			os.Remove(mark)
		}
		if !strings.Contains(string(out), "[tlab ./my") || !strings.Contains(string(out), "done") {
			t.Errorf("%s: no prompt naming the network:\n%s", shell, out)
		}
	}
}
