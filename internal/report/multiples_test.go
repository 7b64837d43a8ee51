package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tlab/internal/results"
)

// TestSmallMultiplesGroupEachKind: consecutive figures of one kind (one
// per network) form one group; a kind asked for again later starts anew.
func TestSmallMultiplesGroupEachKind(t *testing.T) {
	figs := []Figure{{Name: "a1", Kind: "a"}, {Name: "a2", Kind: "a"}, {Name: "b1", Kind: "b"}, {Name: "a3", Kind: "a"}}
	var got []string
	for _, g := range smallMultiples(figs) {
		var names []string
		for _, f := range g {
			names = append(names, f.Name)
		}
		got = append(got, strings.Join(names, "+"))
	}
	if want := "a1+a2 b1 a3"; strings.Join(got, " ") != want {
		t.Errorf("groups %q, want %q", got, want)
	}
}

// TestNetworksSitSideBySideInChromium: a run over four networks draws
// each plot kind once per network; in headless Chromium at 1200 px wide,
// as a reader sees report.html, a kind's figures share rows two by two
// (the first two figures of delay_box at one height, the third below),
// instead of four full-width figures one under another.
func TestNetworksSitSideBySideInChromium(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is missing on CI: scripts/setup --tests installs it")
		}
		t.Skip("chromium is not installed (scripts/setup --tests installs it)")
	}
	dir := t.TempDir()
	var rows []results.Summary
	for _, profile := range []string{"ethernet", "wifi", "5g", "lte"} {
		for _, proto := range []string{"tcp", "quic"} {
			rows = append(rows, results.Summary{Cell: proto + profile, Profile: profile, Protocol: proto, Workload: "periodic", Rep: 1, Seed: 1,
				Fields: []results.Field{{Name: "delay_p5_ms", Value: 10.0}, {Name: "delay_p25_ms", Value: 11.0}, {Name: "delay_p50_ms", Value: 12.0},
					{Name: "delay_p75_ms", Value: 13.0}, {Name: "delay_p95_ms", Value: 15.0}, {Name: "jitter_pct", Value: 3.0}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	m := &results.Manifest{Scenario: "four networks", Plots: []string{"delay_box", "jitter_bars"}}
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	page := buildPage(t, dir)
	// The report has no script of its own: the test's copy gets one that
	// writes each figure's position where --dump-dom shows it.
	probe := `<script>document.body.setAttribute("data-pos", [...document.querySelectorAll("figure")].map(f => f.id + "@" + Math.round(f.getBoundingClientRect().top + scrollY) + ":" + Math.round(f.getBoundingClientRect().left)).join(" "))</script></body>`
	copyPath := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(copyPath, []byte(strings.Replace(page, "</body>", probe, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--window-size=1200,900", "--dump-dom", "file://"+copyPath).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	attr := regexp.MustCompile(`data-pos="([^"]*)"`).FindSubmatch(out)
	if attr == nil {
		t.Fatalf("chromium's DOM has no positions:\n%.2000s", out)
	}
	pos := map[string][2]int{}
	for _, f := range strings.Fields(string(attr[1])) {
		id, at, _ := strings.Cut(f, "@")
		top, left, _ := strings.Cut(at, ":")
		y, _ := strconv.Atoi(top)
		x, _ := strconv.Atoi(left)
		pos[id] = [2]int{y, x}
	}
	first, second, third := pos["delay_box-1-ethernet"], pos["delay_box-2-wifi"], pos["delay_box-3-5g"]
	if first[0] != second[0] || second[1] <= first[1] {
		t.Errorf("delay_box on ethernet at %v and on wifi at %v (top, left): want one row, wifi to the right", first, second)
	}
	if third[0] <= first[0] {
		t.Errorf("delay_box on 5g at %v: want the second row, below %v", third, first)
	}
	if jit := pos["jitter_bars-1-ethernet"]; jit[0] <= third[0] {
		t.Errorf("jitter_bars starts at %v, not below delay_box's figures (%v)", jit, third)
	}
}
