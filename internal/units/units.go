// Package units parses and prints the physical quantities that tlab's
// configuration uses: durations, bit rates, byte sizes and ratios. Each type
// reads itself from YAML and from command-line text, and every parse error
// says what was expected, so that a typo in a profile is caught at load time.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration that reads "25ms", "10us" or "1.5s".
// A bare number is rejected: a delay without a unit is ambiguous.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// ParseDuration parses a Go duration string ("25ms", "1.5s", "100us").
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want a number with a unit such as 25ms, 100us or 1.5s", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return Duration(v), nil
}

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	*d = v
	return err
}

func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	return atLine(n, d.UnmarshalText([]byte(n.Value)))
}

func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// Bitrate is a rate in bits per second. It reads bit rates ("20Mbit",
// "1.5Mbit/s", "3Mb/s", "10Gbit") and byte rates ("50MB/s" and "50MBps"
// are 400 Mbit/s). Prefixes k, M and G are decimal (k = 1000, M = 10^6, as
// in link specifications; a lowercase m is mega, as tc writes "mbit"),
// Ki, Mi and Gi binary (1MiB/s = 8 388 608 bit/s). "bps" in any case but
// "Bps" is refused: most tools read "mbps" as megabits per second and tc
// as megabytes, and an 8x error in a link rate goes unnoticed.
type Bitrate float64

// BitsPerSecond returns the rate as a float.
func (r Bitrate) BitsPerSecond() float64 { return float64(r) }

func (r Bitrate) String() string {
	v := float64(r)
	switch {
	case v == 0:
		return "0"
	case v >= 1e9:
		return trimFloat(v/1e9) + "Gbit"
	case v >= 1e6:
		return trimFloat(v/1e6) + "Mbit"
	case v >= 1e3:
		return trimFloat(v/1e3) + "kbit"
	}
	return trimFloat(v) + "bit"
}

// ParseBitrate parses a rate such as "20Mbit", "1.5 Mbit/s", "50MB/s" or
// "1MiB/s"; see Bitrate for the units it accepts and refuses.
func ParseBitrate(s string) (Bitrate, error) {
	orig := strings.TrimSpace(s)
	num, unit := splitUnit(orig)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a bit rate: want a number with a unit such as 20Mbit, 1.5Mbit/s, 500kbit or 50MB/s", orig)
	}
	if v < 0 {
		return 0, fmt.Errorf("bit rate %q is negative", orig)
	}
	if unit == "" {
		if v != 0 {
			return 0, fmt.Errorf("%q is not a bit rate: the unit is missing (20Mbit, 500kbit, 1Gbit, or 50MB/s for bytes)", orig)
		}
		return 0, nil
	}
	prefix, perByte, err := rateUnit(unit)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", orig, rateUnitFix(err, v, prefix, unit))
	}
	bits := v * prefix
	if perByte {
		bits *= 8
	}
	return Bitrate(bits), nil
}

// splitUnit cuts "50 MB/s" into "50" and "MB/s": the unit is the trailing
// run of letters and slashes.
func splitUnit(s string) (num, unit string) {
	i := len(s)
	for i > 0 {
		c := s[i-1]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/') {
			break
		}
		i--
	}
	return strings.TrimSpace(s[:i]), s[i:]
}

// errAmbiguousBps marks a "bps" unit, which tc and everyone else read
// 8x apart.
var errAmbiguousBps = errors.New("ambiguous bps")

// rateUnit reads a rate's unit: its prefix multiplier and whether it
// counts bytes.
func rateUnit(unit string) (prefix float64, perByte bool, err error) {
	prefix, rest := 1.0, unit
	if len(unit) >= 2 && unit[1] == 'i' && strings.ContainsRune("kKmMgG", rune(unit[0])) {
		prefix, rest = map[byte]float64{'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}[unit[0]|0x20], unit[2:]
	} else if len(unit) >= 1 && strings.ContainsRune("kKmMgG", rune(unit[0])) {
		prefix, rest = map[byte]float64{'k': 1e3, 'm': 1e6, 'g': 1e9}[unit[0]|0x20], unit[1:]
	}
	switch lower := strings.ToLower(rest); {
	case lower == "bit" || lower == "bits" || lower == "bit/s" || lower == "bits/s" || rest == "b/s":
		return prefix, false, nil
	case rest == "B/s" || rest == "Bps" || lower == "byte/s" || lower == "bytes/s":
		return prefix, true, nil
	case lower == "bps":
		return prefix, false, errAmbiguousBps
	}
	return prefix, false, fmt.Errorf("unknown unit %q: want bit, bit/s or b/s for bits (20Mbit, 3Mb/s), B/s or Bps for bytes (50MB/s), with k, M, G (powers of 1000) or Ki, Mi, Gi (of 1024)", unit)
}

// rateUnitFix explains an ambiguous "bps" with both readings written out.
func rateUnitFix(err error, v, prefix float64, unit string) error {
	if err != errAmbiguousBps {
		return err
	}
	prefixText := unit[:len(unit)-len("bps")]
	if prefixText != "" && prefixText[0] != 'k' {
		prefixText = strings.ToUpper(prefixText[:1]) + prefixText[1:]
	}
	asBytes := trimFloat(v) + prefixText + "B/s"
	return fmt.Errorf("\"bps\" is ambiguous (tc's mbps means megabytes per second, most tools' megabits): write %s for bits per second, or %s (the same as %s) for bytes",
		Bitrate(v*prefix).String(), Bitrate(v*prefix*8).String(), asBytes)
}

func (r *Bitrate) UnmarshalText(b []byte) error {
	v, err := ParseBitrate(string(b))
	*r = v
	return err
}

func (r Bitrate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r *Bitrate) UnmarshalYAML(n *yaml.Node) error {
	return atLine(n, r.UnmarshalText([]byte(n.Value)))
}

func (r Bitrate) MarshalYAML() (any, error) { return r.String(), nil }

// Size is a number of bytes. It reads "1500", "64KB" (1000), "64KiB" (1024),
// "1MB" or "1MiB".
type Size int64

func (s Size) String() string {
	v := int64(s)
	switch {
	case v != 0 && v%(1<<20) == 0:
		return strconv.FormatInt(v>>20, 10) + "MiB"
	case v != 0 && v%(1<<10) == 0:
		return strconv.FormatInt(v>>10, 10) + "KiB"
	}
	return strconv.FormatInt(v, 10) + "B"
}

// ParseSize parses a byte count with an optional SI or IEC suffix.
func ParseSize(s string) (Size, error) {
	orig := s
	t := strings.TrimSpace(s)
	mult := int64(1)
	suffixes := []struct {
		s string
		m int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"kB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}}
	for _, suf := range suffixes {
		if strings.HasSuffix(t, suf.s) {
			mult, t = suf.m, strings.TrimSpace(strings.TrimSuffix(t, suf.s))
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a size: want bytes such as 1500, 64KB, 64KiB or 1MiB", orig)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative", strings.TrimSpace(orig))
	}
	// Beyond 2^62 bytes a size is a typo, and its bytes would overflow
	// (found by FuzzParse).
	if v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("size %q is too large (at most 4 EiB)", strings.TrimSpace(orig))
	}
	return Size(math.Round(v * float64(mult))), nil
}

func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	*s = v
	return err
}

func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	return atLine(n, s.UnmarshalText([]byte(n.Value)))
}

func (s Size) MarshalYAML() (any, error) { return s.String(), nil }

// Ratio is a probability in [0, 1]. It reads "1%", "0.1%" or "0.01".
type Ratio float64

func (r Ratio) String() string { return trimFloat(float64(r)*100) + "%" }

// ParseRatio parses a percentage ("10%") or a fraction ("0.1").
func ParseRatio(s string) (Ratio, error) {
	orig := s
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		scale, t = 0.01, strings.TrimSpace(strings.TrimSuffix(t, "%"))
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%q is not a probability: want a percentage such as 1%% or a fraction such as 0.01", orig)
	}
	v *= scale
	if v < 0 || v > 1 {
		return 0, fmt.Errorf("probability %q is outside 0..100%%", orig)
	}
	return Ratio(v), nil
}

func (r *Ratio) UnmarshalText(b []byte) error {
	v, err := ParseRatio(string(b))
	*r = v
	return err
}

func (r Ratio) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

func (r *Ratio) UnmarshalYAML(n *yaml.Node) error {
	return atLine(n, r.UnmarshalText([]byte(n.Value)))
}

func (r Ratio) MarshalYAML() (any, error) { return r.String(), nil }

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// atLine adds the YAML position to a scalar's parse error.
func atLine(n *yaml.Node, err error) error {
	if err == nil {
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a single value, got a %s", n.Line, kindName(n.Kind))
	}
	return fmt.Errorf("line %d: %w", n.Line, err)
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}

// Count prints a count of things in English: "1 cell", "2 cells",
// "0 cells". The noun is given in the singular and takes an "s" (every
// noun tlab counts is regular); a sentence built with "%d cells" reads
// "1 cells" to the one user whose run had one.
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
