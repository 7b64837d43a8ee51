package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"tlab/internal/emu"
	"tlab/internal/testbed/tbtest"
)

func TestMain(m *testing.M) { tbtest.Main(m) }

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := realMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitCodesAndHelp(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string // in stdout+stderr
	}{
		{[]string{"--help"}, exitOK, "Commands:"},
		{[]string{"bogus"}, exitUsage, `unknown command "bogus"`},
		{[]string{"calibrate", "--nope"}, exitUsage, "flag provided but not defined"},
		{[]string{"calibrate", "--mode", "lazy"}, exitUsage, "want sleep or busy"},
		{[]string{"calibrate", "--help"}, exitOK, "-json"},
		{[]string{"profiles", "wfi"}, exitUsage, "built-in profiles are"},
		{[]string{"profiles", "wifi", "--link", "rate"}, exitUsage, "want key=value"},
		{[]string{"profiles", "wifi", "--link", "up.rate=5Mbit"}, exitOK, "rate 5Mbit"},
		{[]string{"version", "extra"}, exitUsage, "unexpected argument"},
	}
	for _, c := range cases {
		code, out, errs := run(c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("tlab %v: exit %d, output %q; want exit %d and %q", c.args, code, out+errs, c.code, c.want)
		}
	}
}

func TestProfilesJSON(t *testing.T) {
	code, out, _ := run("profiles", "--json")
	if code != exitOK {
		t.Fatal(code)
	}
	var ps []emu.Profile
	if err := json.Unmarshal([]byte(out), &ps); err != nil || len(ps) < 9 {
		t.Fatalf("profiles --json: %v, %d profiles", err, len(ps))
	}
}

func TestCleanupJSONOnEmptyRegistry(t *testing.T) {
	code, out, _ := run("cleanup", "--dry-run", "--json")
	if code != exitOK || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Fatalf("cleanup --json: exit %d, %q", code, out)
	}
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }
