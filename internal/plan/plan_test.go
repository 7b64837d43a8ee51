package plan

import (
	"fmt"
	"testing"
	"time"

	_ "tlab/internal/proto/all"
	"tlab/internal/scenario"
	"tlab/internal/workload"
)

// A scenario that exercises what a compiled cell carries: two profiles,
// a built-in protocol and a stack of its own, a matrix over cross
// traffic and the link's loss, two repetitions, 5 ms each way on the
// link (a 10 ms round trip) over ethernet's own delay.
const src = `name: compiled
profiles: [ethernet, 5g]
protocols: [tcp, mine]
repetitions: 2
seed: 7
workload: {type: periodic, interval: 25ms}
duration: 2s
capture: true
link: {delay: 5ms}
cross: {flows: 1}
matrix:
  cross.flows: [0, 3]
  link.loss: [0%, 2%]
stacks:
  mine:
    client: ./cli --to {server} --every {workload.interval_ms} --events {events}
`

func TestCompiledCellsCarryTheirPointAsValues(t *testing.T) {
	s, err := scenario.Parse("compiled.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	// 2 profiles x (2 x 2 matrix points) x 2 protocols x 2 repetitions.
	if len(cells) != 32 {
		t.Fatalf("%d cells, want 2 x 4 x 2 x 2 = 32", len(cells))
	}
	for i, c := range cells {
		if c.Index != i || c.Scenario != "compiled" || !c.Capture {
			t.Errorf("%s: index %d, scenario %q, capture %v", c.ID, c.Index, c.Scenario, c.Capture)
		}
		// The seed is the repetition's: 7 for the first.
		if want := scenario.RepetitionSeed(7, c.Rep); c.Seed != want || (c.Rep == 1 && c.Seed != 7) {
			t.Errorf("%s: seed %d, want %d", c.ID, c.Seed, want)
		}
		// The point's values: cross.flows and link.loss from its params.
		flows := map[string]int{"0": 0, "3": 3}[c.Params[0].Value]
		loss := map[string]float64{"0%": 0, "2%": 0.02}[c.Params[1].Value]
		if c.Cross.Flows != flows {
			t.Errorf("%s: cross flows %d, want %d", c.ID, c.Cross.Flows, flows)
		}
		if len(c.Topology.Links) != 1 {
			t.Fatalf("%s: %d links, want client-server's one", c.ID, len(c.Topology.Links))
		}
		link := c.Topology.Links[0].Config
		if float64(link.Up.Loss.Rate) != loss || float64(link.Down.Loss.Rate) != loss {
			t.Errorf("%s: loss %v/%v, want %v both ways", c.ID, link.Up.Loss.Rate, link.Down.Loss.Rate, loss)
		}
		// link: {delay: 5ms} overrides every profile's delay.
		if link.Up.Delay.D() != 5*time.Millisecond {
			t.Errorf("%s: up delay %v, want the override's 5ms", c.ID, link.Up.Delay)
		}
		if c.Roles["client"] != "client" || c.Roles["server"] != "server" {
			t.Errorf("%s: roles %v, want client-server's hosts", c.ID, c.Roles)
		}
		// The scenario's own stack runs as commands around the workload,
		// with the repetition's seed; tcp runs the workload itself.
		cmd, isCommand := c.Workload.(workload.Command)
		switch c.Protocol {
		case "mine":
			if !isCommand || cmd.Stack.Name != "mine" || cmd.Seed != c.Seed || cmd.Common.Duration != 2*time.Second || cmd.Params["interval"] != "25ms" {
				t.Errorf("%s: workload %+v, want mine's commands around the periodic workload", c.ID, c.Workload)
			}
		case "tcp":
			if isCommand || c.Workload.Info().Type != "periodic" {
				t.Errorf("%s: workload %T, want the periodic workload", c.ID, c.Workload)
			}
		}
	}
}

// TestARepeatedCellIsTheRepetitionTheScenarioWouldCompile: a later
// repetition made from a compiled first one (repetitions: auto adds them
// so) carries that repetition's seed, also in a command stack's workload,
// as the scenario's own cell of that repetition does: the seed depends on
// the point and the repetition only (RepetitionSeed).
func TestARepeatedCellIsTheRepetitionTheScenarioWouldCompile(t *testing.T) {
	s, err := scenario.Parse("compiled.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	point := func(c Cell) string { return fmt.Sprint(c.Profile, c.Protocol, c.Params) }
	second := map[string]Cell{}
	for _, c := range cells {
		if c.Rep == 2 {
			second[point(c)] = c
		}
	}
	n := 0
	for _, first := range cells {
		if first.Rep != 1 {
			continue
		}
		want := second[point(first)]
		got := first.Repeat(2, "again")
		if got.Seed != want.Seed || got.Rep != 2 || got.ID != "again" {
			t.Errorf("%s repeated: seed %d rep %d id %s, want the scenario's %d", first.ID, got.Seed, got.Rep, got.ID, want.Seed)
		}
		if cmd, ok := got.Workload.(workload.Command); ok && cmd.Seed != want.Seed {
			t.Errorf("%s repeated: the stack's commands get seed %d, want %d", first.ID, cmd.Seed, want.Seed)
		}
		// And back: the point's seed, not the cell's, is where a
		// repetition's comes from.
		if back := want.Repeat(1, "back"); back.Seed != 7 {
			t.Errorf("%s repeated as the first: seed %d, want the scenario's 7", want.ID, back.Seed)
		}
		if cmd, ok := first.Workload.(workload.Command); ok && cmd.Seed != 7 {
			t.Errorf("%s: repeating changed the first repetition's own commands' seed to %d", first.ID, cmd.Seed)
		}
		n++
	}
	// 2 profiles x 4 points x 2 protocols.
	if n != 16 {
		t.Errorf("%d first repetitions, want 16", n)
	}
}
