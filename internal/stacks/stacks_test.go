package stacks

import (
	"strings"
	"testing"

	_ "tlab/internal/proto/all"
	"tlab/internal/scenario"
)

// TestStacksGivenAsCommands: a scenario's own stack is listed among its
// protocols beside built-in ones; its templates may use only the
// placeholders the workload gives, and mistakes say file and line.
func TestStacksGivenAsCommands(t *testing.T) {
	const own = `name: own
profiles: [ethernet]
protocols: [tcp, mine]
workload: {type: periodic, interval: 25ms}
duration: 2s
stacks:
  mine:
    server: ./srv --listen {listen}
    client: ./cli --to {server} --every {workload.interval_ms} --events {events}
`
	sc, err := scenario.Parse("own.yaml", []byte(own))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := Command(sc, "mine"); !ok || st.Server != "./srv --listen {listen}" {
		t.Errorf("stack mine: %+v %v", st, ok)
	}
	if !Any(sc) || len(Lines(sc)) != 1 || !strings.Contains(Lines(sc)[0], "stack mine (the scenario's own, given as commands): server: ./srv --listen {listen}; client: ./cli") {
		t.Errorf("stack lines %q", Lines(sc))
	}
	// The section provides the protocol: the scenario's settings apply
	// to the built-in ones only.
	if got := sc.BuiltInProtocols(); len(got) != 1 || got[0] != "tcp" {
		t.Errorf("built-in protocols %v", got)
	}
	for _, c := range []struct{ from, to, want string }{
		{"{workload.interval_ms}", "{workload.intervall}", "own.yaml:9: stack mine's client: unknown placeholder {workload.intervall}"},
		{"--listen {listen}", "--listen {listen} {secret}", "own.yaml:8: stack mine's server: unknown placeholder {secret}"},
		{"    client: ./cli --to", "    events: xml\n    client: ./cli --to", `own.yaml:9: stack mine: events "xml": want one of jsonl, csv, irtt, iperf3`},
		{"[tcp, mine]", "[tcp]", "own.yaml:8: stack mine is not one of the protocols (tcp)"},
		{"  mine:", "  tcp:", `own.yaml:8: stack "tcp": a built-in protocol has that name`},
		{"    client: ./cli --to {server} --every {workload.interval_ms} --events {events}\n", "", "own.yaml:8: stack mine: give its client command"},
	} {
		src := strings.Replace(own, c.from, c.to, 1)
		if c.to == "  tcp:" {
			src = strings.Replace(src, "[tcp, mine]", "[h3, tcp]", 1)
		}
		if _, err := scenario.Parse("own.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q → %q: %v\nwant %q", c.from, c.to, err, c.want)
		}
	}
}
