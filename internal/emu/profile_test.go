package emu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBuiltinProfilesParseAndDocumentTheirSource(t *testing.T) {
	ps := BuiltinProfiles()
	want := []string{"5g", "cellular", "cloud", "ethernet", "lte", "satellite", "wifi", "loss-ge-b", "loss-random-10", "loss-ge-b-up", "loss-random-10-up"}
	have := map[string]Profile{}
	for _, p := range ps {
		have[p.Name] = p
		if p.Source == "" || p.Description == "" {
			t.Errorf("profile %s has no source or description", p.Name)
		}
	}
	for _, n := range want {
		if _, ok := have[n]; !ok {
			t.Errorf("built-in profile %s missing", n)
		}
	}
	rtts := map[string]time.Duration{"ethernet": 520 * time.Microsecond, "5g": 10688 * time.Microsecond, "cloud": 13553 * time.Microsecond,
		"wifi": 25 * time.Millisecond, "cellular": 100 * time.Millisecond, "satellite": 600 * time.Millisecond}
	for n, rtt := range rtts {
		if got := have[n].Link.BaseRTT(); got != rtt {
			t.Errorf("%s: RTT %v, want %v", n, got, rtt)
		}
	}
	if w := have["wifi"].Link; w.Up.Rate != 20e6 || w.Down.Rate != 20e6 {
		t.Errorf("wifi rates %v/%v", w.Up.Rate, w.Down.Rate)
	}
	if g := have["5g"].Link; g.Up.Rate != 60e6 || g.Down.Rate != 300e6 || g.Up.Jitter == 0 {
		t.Errorf("5g: per-direction settings not applied: %+v", g)
	}
}

func TestProfileStackAndOverrides(t *testing.T) {
	ov, err := ParseOverrides("up.rate=5Mbit,down.loss=2%,jitter=1ms")
	if err != nil {
		t.Fatal(err)
	}
	link, used, err := ResolveLink("wifi+loss-ge-b", ov)
	if err != nil {
		t.Fatal(err)
	}
	if len(used) != 2 {
		t.Fatalf("used %d profiles", len(used))
	}
	if link.Up.Rate != 5e6 || link.Down.Rate != 20e6 {
		t.Errorf("rates up %v down %v, want 5Mbit and 20Mbit", link.Up.Rate, link.Down.Rate)
	}
	if link.Up.Loss.Model != LossGilbert || link.Down.Loss.Model != LossBernoulli || link.Down.Loss.Rate != 0.02 {
		t.Errorf("loss up %+v down %+v", link.Up.Loss, link.Down.Loss)
	}
	if link.Up.Delay.D() != 12500*time.Microsecond || link.Up.Jitter.D() != time.Millisecond {
		t.Errorf("delay %v jitter %v", link.Up.Delay, link.Up.Jitter)
	}
}

// TestOneInterfaceLossOverlays: study B's -up overlays lose packets on
// the client's egress only, as netem on one interface does.
func TestOneInterfaceLossOverlays(t *testing.T) {
	for _, name := range []string{"wifi+loss-random-10-up", "wifi+loss-ge-b-up"} {
		link, _, err := ResolveLink(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if link.Up.Loss.Model == "" || link.Up.Loss.Model == LossNone || (link.Down.Loss.Model != "" && link.Down.Loss.Model != LossNone) {
			t.Errorf("%s: loss up %+v, down %+v; want up only", name, link.Up.Loss, link.Down.Loss)
		}
	}
}

func TestProfileErrorsSayWhereAndWhy(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"name: x\nrtt: 10ms\nrtae: 5Mbit\n":               `x.yaml:3: unknown key "rtae"`,
		"name: x\nrate: 20 apples\n":                      "x.yaml:2: ",
		"name: x\nloss:\n  model: bernoulli\n  rat: 1%\n": `unknown key "rat"`,
		"name: x\nup:\n  delay: 5\n":                      "not a duration",
		"name: x\nloss:\n  model: gilbert-elliott\n":      "gilbert-elliott needs",
		"name: x\nrate: 1Mbit\ntrace: t.txt\n":            "exclusive",
	}
	for src, want := range cases {
		path := filepath.Join(dir, "x.yaml")
		os.WriteFile(path, []byte(src), 0o644)
		_, err := LoadProfile(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
	if _, err := LoadProfile("wfi"); err == nil || !strings.Contains(err.Error(), "wifi") {
		t.Errorf("unknown profile error should list the built-ins: %v", err)
	}
	if _, err := ParseOverrides("rate"); err == nil {
		t.Error("override without = accepted")
	}
}
