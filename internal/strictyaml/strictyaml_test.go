package strictyaml

import (
	"strings"
	"testing"

	"tlab/internal/units"
)

type inner struct {
	Rate  units.Bitrate `yaml:"rate"`
	Count int           `yaml:"count"`
}

type outer struct {
	Name  string           `yaml:"name"`
	Inner inner            `yaml:"inner"`
	List  []inner          `yaml:"list"`
	Map   map[string]inner `yaml:"map"`
}

func TestUnknownKeyNamesFileLineAndChoices(t *testing.T) {
	src := "name: x\ninner:\n  rate: 1Mbit\n  cuont: 3\n"
	var v outer
	err := Unmarshal("p.yaml", []byte(src), &v)
	if err == nil {
		t.Fatal("unknown key accepted")
	}
	for _, want := range []string{"p.yaml:4", `"cuont"`, "count, rate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestShapeAndValueErrors(t *testing.T) {
	cases := map[string]string{
		"inner: [1, 2]\n":                    "want a mapping",
		"list:\n  - rate: 1Mbit\n  - x: 1\n": `p.yaml:3: unknown key "x"`,
		"map:\n  a:\n    rate: fast\n":       "p.yaml:3: ",
		"inner:\n  count: many\n":            "p.yaml",
	}
	for src, want := range cases {
		var v outer
		err := Unmarshal("p.yaml", []byte(src), &v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", src, err, want)
		}
	}
}

func TestDecodeOntoExistingValueOverrides(t *testing.T) {
	v := outer{Name: "base", Inner: inner{Rate: 5e6, Count: 2}}
	if err := Unmarshal("o.yaml", []byte("inner:\n  count: 7\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.Name != "base" || v.Inner.Rate != 5e6 || v.Inner.Count != 7 {
		t.Fatalf("override lost fields: %+v", v)
	}
}

// TestSyntaxErrorsNameTheLineAnEditorShows: a YAML syntax error reads
// FILE:LINE: with lines counted from one, as an editor counts them. Each
// expected line is counted by hand in its document. yaml.v3 counts from
// zero for its parser's problems (it adds one for its scanner's only), so
// without the correction the first five are one line early.
func TestSyntaxErrorsNameTheLineAnEditorShows(t *testing.T) {
	cases := []struct{ src, want string }{
		// The [ that is never closed opens on line 2.
		{"name: x\nprotocols: [tcp, quic\nprofiles: [ethernet]\n", "p.yaml:2: YAML syntax: did not find expected ',' or ']' (a [ on or before this line is not closed)"},
		{"a: 1\nb: 2\nc: [1,2\n\n\nd: 3\n", "p.yaml:3: "},
		{"name: x\nprotocols: {a: 1\nprofiles: [ethernet]\n", "p.yaml:2: YAML syntax: did not find expected ',' or '}'"},
		// The badly indented key is on line 3; the list item on line 4.
		{"name: x\nprotocols: [tcp]\n  profiles: ethernet\n", "p.yaml:3: YAML syntax: did not find expected key"},
		{"a: 1\nb:\n  - x\n - y\n", "p.yaml:4: "},
		// Scanner problems were already counted from one: the tab is on
		// line 2, the quote that never closes opens on line 2.
		{"name: x\n\tprotocols: x\n", "p.yaml:2: YAML syntax: found a tab character"},
		{"name: x\nprotocols: \"abc\nb: 2\n", "p.yaml:2: YAML syntax: found unexpected end of stream"},
	}
	for _, c := range cases {
		var v outer
		err := Unmarshal("p.yaml", []byte(c.src), &v)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s...", c.src, err, c.want)
		}
	}
}
