package units

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseBitrate(t *testing.T) {
	good := map[string]float64{"20Mbit": 20e6, "1.5Mbit/s": 1.5e6, "500kbit/s": 500e3, "10Gbit": 10e9, "0": 0, "64kbit": 64e3,
		"50mbit": 50e6, "20 Mbit/s": 20e6, "3Mb/s": 3e6, "100bit": 100}
	for in, want := range good {
		got, err := ParseBitrate(in)
		if err != nil || float64(got) != want {
			t.Errorf("ParseBitrate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"20", "fast", "-1Mbit", "Mbit", "20M", "20Mb", "20MB"} {
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

// A byte rate is a byte rate: 50MB/s was read as 50 Mbit/s, an 8x error.
// Expected values by hand, SI prefixes (M = 10^6) and IEC ones (Mi = 2^20),
// 8 bits to the byte:
//
//	50MB/s   = 50 * 10^6 * 8      = 400 000 000 bit/s
//	50MBps   = the same            = 400 000 000 bit/s
//	1.5GB/s  = 1.5 * 10^9 * 8     =  12 000 000 000 bit/s
//	125kB/s  = 125 * 10^3 * 8     =   1 000 000 bit/s
//	1MiB/s   = 1 048 576 * 8      =   8 388 608 bit/s
//	2Mibit   = 2 * 1 048 576      =   2 097 152 bit/s
//	10 bytes/s = 80 bit/s
func TestParseBitrateReadsByteRatesAsBytes(t *testing.T) {
	for in, want := range map[string]float64{
		"50MB/s": 400e6, "50MBps": 400e6, "1.5GB/s": 12e9, "125kB/s": 1e6, "125KB/s": 1e6,
		"1MiB/s": 8388608, "2Mibit": 2097152, "10 bytes/s": 80, "3 Mbyte/s": 24e6,
	} {
		got, err := ParseBitrate(in)
		if err != nil || float64(got) != want {
			t.Errorf("ParseBitrate(%q) = %v, %v; want %v bit/s", in, float64(got), err, want)
		}
	}
}

// "bps" is megabits to most people and megabytes to tc ("mbps: megabytes
// per second", tc(8)), whatever its case: every such spelling is refused
// with both readings written out, so the user picks one. 50 mbps read as
// megabytes is 50 * 8 = 400 Mbit.
func TestParseBitrateRefusesAmbiguousBps(t *testing.T) {
	for _, in := range []string{"50mbps", "50Mbps", "50MBPS", "500kbps", "1Gbps", "800bps"} {
		_, err := ParseBitrate(in)
		if err == nil {
			t.Errorf("ParseBitrate(%q) accepted an ambiguous unit", in)
			continue
		}
		if !strings.Contains(err.Error(), "megabytes per second") {
			t.Errorf("ParseBitrate(%q): the error does not say tc's reading: %v", in, err)
		}
	}
	_, err := ParseBitrate("50mbps")
	if err == nil || !strings.Contains(err.Error(), "50Mbit") || !strings.Contains(err.Error(), "400Mbit") {
		t.Errorf("ParseBitrate(50mbps) should show both fixes, 50Mbit and 400Mbit: %v", err)
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
