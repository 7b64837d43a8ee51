package scenario_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"tlab/internal/scenario"
	"tlab/scenarios"
)

// TestRepetitionSeedIsSplitMix64: the second and third repetitions of
// seed 1 and the second of seed 42, computed by hand from SplitMix64's
// finaliser over seed + rep * 0x9e3779b97f4a7c15 (64-bit arithmetic, in
// Python: z = (s + r*G) mod 2^64; z ^= z>>30; z *= 0xbf58476d1ce4e5b9;
// z ^= z>>27; z *= 0x94d049bb133111eb; z ^= z>>31); the first repetition
// keeps the scenario's seed.
func TestRepetitionSeedIsSplitMix64(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		rep  int
		want uint64
	}{{1, 1, 1}, {1, 2, 13757245211066428519}, {1, 3, 17911839290282890590}, {42, 2, 2949826092126892291}, {42, 1, 42}} {
		if got := scenario.RepetitionSeed(c.seed, c.rep); got != c.want {
			t.Errorf("RepetitionSeed(%d, %d) = %d, want %d", c.seed, c.rep, got, c.want)
		}
	}
}

// TestPresetCellsFollowTheirFiles: every built-in preset's cells, as
// sections moved out of package scenario and the plan changes, stay what
// the file says: profiles x matrix points x protocols x repetitions
// cells (counted here from the YAML itself, not through the scenario),
// IDs unique and numbered in order, the first cell the first profile's
// first protocol's first repetition (order: fixed), and each cell's seed
// its repetition's, the same for every protocol.
func TestPresetCellsFollowTheirFiles(t *testing.T) {
	checked := 0
	for _, name := range scenarios.Names() {
		if _, isSuite, _ := scenarios.ReadSuite(name); isSuite {
			continue // its parts are presets of their own
		}
		data, _ := scenarios.Read(name)
		var raw struct {
			Profiles    []string             `yaml:"profiles"`
			Protocols   []string             `yaml:"protocols"`
			Repetitions string               `yaml:"repetitions"`
			Matrix      map[string]yaml.Node `yaml:"matrix"`
			Seed        uint64               `yaml:"seed"`
			Order       string               `yaml:"order"`
		}
		if err := yaml.Unmarshal(data, &raw); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		reps := 1
		switch raw.Repetitions {
		case "":
		case "auto":
			reps = scenario.AutoMinRepetitions
		default:
			reps, _ = strconv.Atoi(raw.Repetitions)
		}
		want := len(raw.Profiles) * len(raw.Protocols) * reps
		for _, vs := range raw.Matrix {
			want *= len(vs.Content)
		}
		seed := raw.Seed
		if seed == 0 {
			seed = 1
		}
		s, err := scenario.Parse(name+".yaml", data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cells, err := s.Cells()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(cells) != want {
			t.Errorf("%s: %d cells, want %d (%d profiles x %d protocols x %d repetitions x the matrix's lists)", name, len(cells), want, len(raw.Profiles), len(raw.Protocols), reps)
		}
		ids := map[string]bool{}
		for i, c := range cells {
			// c0001_PROFILE_PROTOCOL_[KEY=VALUE_...]rREP, numbered from 1.
			if !strings.HasPrefix(c.ID, fmt.Sprintf("c%04d_", i+1)) || !strings.HasSuffix(c.ID, fmt.Sprintf("_r%d", c.Rep)) || ids[c.ID] || c.Index != i {
				t.Errorf("%s: cell %d's ID %q: not c%04d_..._r%d, or not unique", name, i, c.ID, i+1, c.Rep)
			}
			ids[c.ID] = true
			if wantSeed := scenario.RepetitionSeed(seed, c.Rep); c.Seed != wantSeed {
				t.Errorf("%s: cell %s's seed %d, want repetition %d's %d", name, c.ID, c.Seed, c.Rep, wantSeed)
			}
		}
		if raw.Order != "random" && len(cells) > 0 {
			if c := cells[0]; c.Profile != raw.Profiles[0] || c.Protocol != raw.Protocols[0] || c.Rep != 1 {
				t.Errorf("%s: first cell %s, want %s's %s, repetition 1", name, c.ID, raw.Profiles[0], raw.Protocols[0])
			}
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("checked %d presets, want every scenario preset", checked)
	}
}
