package emu

import (
	"bytes"
	"testing"
)

// FuzzParseTrace: no trace file makes the parser panic, and one it accepts
// is a usable schedule: non-decreasing, with a positive period.
func FuzzParseTrace(f *testing.F) {
	f.Add([]byte("1\n2\n3\n"))
	f.Add([]byte("# a comment\n0\n0\n5\n"))
	f.Add([]byte("12\n3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := ParseTrace("fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := 1; i < len(ops); i++ {
			if ops[i] < ops[i-1] {
				t.Fatalf("accepted a trace going back in time: %v", ops)
			}
		}
		if ops[len(ops)-1] <= 0 {
			t.Fatalf("accepted a trace without a period: %v", ops)
		}
		TraceMeanRate(ops)
	})
}

// FuzzParseProfile: no profile file makes the parser panic, and one it
// accepts builds a link (every model constructible).
func FuzzParseProfile(f *testing.F) {
	entries, _ := builtinProfiles.ReadDir("profiles")
	for _, e := range entries {
		b, _ := builtinProfiles.ReadFile("profiles/" + e.Name())
		f.Add(b)
	}
	f.Add([]byte("rate: 10Mbit\nqueue: {type: fq_codel, flows: 16}\nloss: {model: gilbert-elliott, rate: 1%, mean_burst: 3}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile("fuzz.yaml", data)
		if err != nil {
			return
		}
		if p.Link.Up.Trace != "" || p.Link.Down.Trace != "" {
			return // a trace names a file
		}
		if _, _, err := NewLink(p.Link, 1, "fuzz", nil, nil); err != nil {
			t.Fatalf("accepted a profile that builds no link: %v\n%s", err, data)
		}
	})
}
