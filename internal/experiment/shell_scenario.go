package experiment

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"tlab/internal/emu"
	"tlab/internal/scenario"
)

// ShellNetwork is what tlab shell's flags say of its network: a scenario
// file, or a profile; the link's overrides and queue, the seed, cross:
// fields (FIELD=VALUE) and --set values. ProfileGiven and SeedGiven say
// the flag was given (a file's own profile and seed stand otherwise).
type ShellNetwork struct {
	File, Profile           string
	ProfileGiven, SeedGiven bool
	Link, Queue             string
	Seed                    uint64
	Cross, Sets             []string
}

// ShellScenario is the network of a shell as a scenario: a file's, or one
// built from the flags (one profile, the shell's seed, a placeholder
// workload whose roles place the client and the server), as Run.Adhoc is
// tlab run's.
func ShellScenario(n ShellNetwork) (*scenario.Scenario, error) {
	file, profile, profileGiven, link, queue, seed, seedGiven, cross, sets := n.File, n.Profile, n.ProfileGiven, n.Link, n.Queue, n.Seed, n.SeedGiven, n.Cross, n.Sets
	var over []string
	if queue != "" {
		over = append(over, "link.queue="+queue)
	}
	for _, c := range cross {
		if !strings.Contains(c, "=") {
			return nil, fmt.Errorf("--cross %q: want FIELD=VALUE, such as flows=2", c)
		}
		over = append(over, "cross."+c)
	}
	if file != "" {
		if profileGiven {
			over = append(over, "profiles=["+profile+"]")
		}
		if seedGiven {
			over = append(over, "seed="+strconv.FormatUint(seed, 10))
		}
		if link != "" {
			ov, err := emu.ParseOverrides(link)
			if err != nil {
				return nil, fmt.Errorf("--link: %w", err)
			}
			b, _ := yaml.Marshal(ov)
			over = append(over, "link="+strings.TrimSpace(flowYAML(b)))
		}
		return scenario.Load(file, append(over, sets...)...)
	}
	doc := map[string]any{
		"name": "shell", "description": "A tlab shell's network.",
		"profiles": []string{profile}, "protocols": []string{"tcp"},
		"workload": map[string]any{"type": "periodic"}, "count": 1, "warmup": "0s", "seed": seed,
	}
	if link != "" {
		ov, err := emu.ParseOverrides(link)
		if err != nil {
			return nil, fmt.Errorf("--link: %w", err)
		}
		doc["link"] = ov
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return scenario.Parse("the command line", data, append(over, sets...)...)
}

// flowYAML turns a block YAML mapping into one line, for a --set value.
func flowYAML(b []byte) string {
	var v any
	if yaml.Unmarshal(b, &v) != nil {
		return string(b)
	}
	n := &yaml.Node{}
	n.Encode(v)
	n.Style = yaml.FlowStyle
	out, _ := yaml.Marshal(n)
	return string(out)
}
