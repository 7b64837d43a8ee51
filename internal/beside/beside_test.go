package beside

import (
	"strings"
	"testing"

	_ "tlab/internal/proto/all"
	"tlab/internal/scenario"
)

const head = `name: b
profiles: [ethernet]
protocols: [tcp]
workload: {type: periodic, interval: 10ms}
count: 5
`

// TestTheSectionIsDecodedByItsOwner: beside: is this package's section:
// its flows are read back with Of, in the file's order, each workload
// decoded as under workload: (its own parameters, the scenario's count).
func TestTheSectionIsDecodedByItsOwner(t *testing.T) {
	s, err := scenario.Parse("b.yaml", []byte(head+`beside:
  - name: loop
    protocol: quic
    workload: {type: periodic, interval: 20ms}
  - name: feed
    protocol: mqtt-tcp
    workload: {type: pubsub}
`))
	if err != nil {
		t.Fatal(err)
	}
	flows := Of(s)
	if len(flows) != 2 || flows[0].Name != "loop" || flows[0].Protocol != "quic" || flows[1].Name != "feed" || flows[1].Protocol != "mqtt-tcp" {
		t.Fatalf("flows %+v, want loop over quic, then feed over mqtt-tcp", flows)
	}
	if got := flows[0].Workload.Info().Type; got != "periodic" {
		t.Errorf("loop's workload %s, want periodic", got)
	}
	if got := flows[1].Workload.Info().Type; got != "pubsub" {
		t.Errorf("feed's workload %s, want pubsub", got)
	}
	plain, err := scenario.Parse("p.yaml", []byte(head))
	if err != nil {
		t.Fatal(err)
	}
	if flows := Of(plain); flows != nil {
		t.Errorf("a scenario without beside: has flows %+v", flows)
	}
}

// TestTheSectionsErrorsNameTheirLine: each refusal names the line of
// the field at fault (counted in the texts below: head is lines 1-5,
// beside: line 6, the first entry's name line 7).
func TestTheSectionsErrorsNameTheirLine(t *testing.T) {
	many := "beside:\n"
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		many += "  - {name: " + n + ", protocol: tcp}\n"
	}
	for _, c := range []struct{ name, text, want string }{
		{"bad name", "beside:\n  - name: Loop\n    protocol: tcp\n", "b.yaml:7: beside name \"Loop\""},
		{"twice", "beside:\n  - name: a\n    protocol: tcp\n  - name: a\n    protocol: tcp\n", "b.yaml:9: beside name \"a\" is used twice"},
		{"protocol", "beside:\n  - name: a\n    protocol: nope\n", "b.yaml:8: unknown protocol \"nope\""},
		{"cannot carry", "beside:\n  - name: a\n    protocol: mqtt-tcp\n", "b.yaml:8: mqtt-tcp lacks capability request-response"},
		{"workload type", "beside:\n  - name: a\n    protocol: tcp\n    workload: {type: nope}\n", "b.yaml:9: unknown workload type \"nope\""},
		{"unknown key", "beside:\n  - name: a\n    extra: 1\n", "b.yaml:8: unknown key \"extra\""},
		{"shape", "beside: {name: a}\n", "b.yaml:6: want a list"},
		{"too many", many, "b.yaml:7: beside: 9 workloads, at most 8"}, // the list's line
	} {
		_, err := scenario.Parse("b.yaml", []byte(head+c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
