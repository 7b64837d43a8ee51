package main

import (
	"fmt"
	"strings"
	"testing"

	"tlab/internal/results"
)

// TestAdviseExitCodes: tlab advise exits 0 when a stack meets every
// requirement on every network, 1 when not (as grep), 2 on a bad
// requirement, and says why.
func TestAdviseExitCodes(t *testing.T) {
	dir := t.TempDir()
	var rows []results.Summary
	for i, p := range []string{"tcp", "h1s"} {
		for rep := 1; rep <= 3; rep++ {
			rows = append(rows, results.Summary{Cell: fmt.Sprintf("%s%d", p, rep), Profile: "5g", Protocol: p, Rep: rep,
				Fields: []results.Field{{Name: "delay_p99_ms", Value: 12 + 10*float64(i) + 0.1*float64(rep)}, {Name: "bytes_per_request", Value: 330 + 180*float64(i)}}})
		}
	}
	if err := results.WriteSummaries(dir, rows); err != nil {
		t.Fatal(err)
	}
	if err := (&results.Manifest{Scenario: "advise", Seed: 1}).Save(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		reqs []string
		code int
		want string
	}{
		{[]string{"delay_p99_ms<=20"}, exitOK, "5g: tcp meets every requirement"},
		{[]string{"delay_p99_ms<=30", "bytes_per_request<=400"}, exitOK, "h1s  fails"},
		{[]string{"delay_p99_ms<=5"}, exitFailure, "no stack meets every requirement"},
		{[]string{"delay_p99<=5"}, exitUsage, `no metric "delay_p99"`},
	} {
		args := []string{"advise", dir}
		for _, r := range c.reqs {
			args = append(args, "--require", r)
		}
		code, out, errs := run(args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d, %s%s; want %d and %q", c.reqs, code, out, errs, c.code, c.want)
		}
	}
}
