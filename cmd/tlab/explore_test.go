package main

import (
	"strings"
	"testing"
)

// tlab explore refuses what it cannot search before anything runs.
func TestExploreRefusesBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"explore"}, "give a scenario file or preset, or --resume DIR"},
		{[]string{"explore", "explore-quick", "--budget", "lots"}, `--budget "lots": want a number of cells (200) or a duration (30m)`},
		{[]string{"explore", "quick"}, "no explore: section"},
		{[]string{"explore", "explore-quick", "--quality", "perfect"}, `--quality "perfect"`},
		{[]string{"explore", "explore-quick", "--set", "explore.rule=magic"}, `rule "magic": want t or sign`},
		// --no-why and --why=false are flags (the quality still refused).
		{[]string{"explore", "explore-quick", "--no-why", "--quality", "perfect"}, `--quality "perfect"`},
		{[]string{"explore", "explore-quick", "--why=false", "--quality", "perfect"}, `--quality "perfect"`},
		// Rounds on a cluster: one engine, N tasks, an image for pods.
		{[]string{"explore", "explore-quick", "--slurm", "--k8s"}, "give --slurm or --k8s, not both"},
		{[]string{"explore", "explore-quick", "--slurm", "--shards", "0"}, "--shards must be at least 1"},
		{[]string{"explore", "explore-quick", "--k8s"}, "--k8s needs --image"},
		{[]string{"explore", "--round", "/nonexistent/rounds/001", "--shard", "auto/2"}, "neither JOB_COMPLETION_INDEX"},
		{[]string{"explore", "--round", "/nonexistent/rounds/001", "--shard", "1/2"}, "a round's directory"},
	} {
		code, out, errs := run(c.args...)
		if code != exitUsage || !strings.Contains(out+errs, c.want) {
			t.Errorf("tlab %v: exit %d, output %q; want exit %d and %q", c.args, code, out+errs, exitUsage, c.want)
		}
	}
}

// tlab validate says what tlab explore would search.
func TestValidateNamesTheExploration(t *testing.T) {
	code, out, errs := run("validate", "explore-quick")
	if want := "explore: link.loss 0%..5%, at most 16 points of 2 to 8 repetitions, at most 80 cells"; code != exitOK || !strings.Contains(out, want) {
		t.Errorf("tlab validate explore-quick: exit %d, %q %q; want %q", code, out, errs, want)
	}
}
