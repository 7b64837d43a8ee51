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
