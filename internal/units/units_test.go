package units

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseBitrate(t *testing.T) {
	good := map[string]float64{"20Mbit": 20e6, "1.5Mbit/s": 1.5e6, "500kbps": 500e3, "10Gbit": 10e9, "0": 0, "64kbit": 64e3}
	for in, want := range good {
		got, err := ParseBitrate(in)
		if err != nil || float64(got) != want {
			t.Errorf("ParseBitrate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"20", "fast", "-1Mbit", "Mbit"} {
		if _, err := ParseBitrate(in); err == nil {
			t.Errorf("ParseBitrate(%q) accepted", in)
		}
	}
	// A negative rate has a unit: say what is wrong with it.
	if _, err := ParseBitrate("-5Mbit"); err == nil || !strings.Contains(err.Error(), "negative") || strings.Contains(err.Error(), "unit") {
		t.Errorf("ParseBitrate(-5Mbit): %v", err)
	}
	if _, err := ParseSize("-3KB"); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("ParseSize(-3KB): %v", err)
	}
}

func TestParseSizeAndRatio(t *testing.T) {
	sizes := map[string]int64{"1500": 1500, "64KB": 64000, "64KiB": 65536, "1MiB": 1 << 20, "3.5KB": 3500}
	for in, want := range sizes {
		got, err := ParseSize(in)
		if err != nil || int64(got) != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	ratios := map[string]float64{"1%": 0.01, "0.1%": 0.001, "0.25": 0.25, "100%": 1}
	for in, want := range ratios {
		got, err := ParseRatio(in)
		if err != nil || float64(got)-want > 1e-12 || want-float64(got) > 1e-12 {
			t.Errorf("ParseRatio(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"120%", "-1%", "x"} {
		if _, err := ParseRatio(in); err == nil {
			t.Errorf("ParseRatio(%q) accepted", in)
		}
	}
}

func TestYAMLErrorsCarryLine(t *testing.T) {
	var v struct {
		Delay Duration `yaml:"delay"`
		Rate  Bitrate  `yaml:"rate"`
	}
	err := yaml.Unmarshal([]byte("delay: 5ms\nrate: 20 apples\n"), &v)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("want an error naming line 2, got %v", err)
	}
	if err := yaml.Unmarshal([]byte("delay: 5ms\nrate: 20Mbit\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.Delay.D() != 5*time.Millisecond || v.Rate != 20e6 {
		t.Fatalf("decoded %+v", v)
	}
}

func TestCountIsSingularOnlyForOne(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "cell", "0 cells"},
		{1, "cell", "1 cell"},
		{2, "matrix point", "2 matrix points"},
		{-1, "cell", "-1 cells"},
	} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
