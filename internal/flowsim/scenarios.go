package flowsim

import (
	"fmt"
	"sort"
	"time"
)

// StudyRTT is the round trip study C's own timings fix: its static
// allowance averaged 234.56 kbit/s in the two-stream small-buffer scenario,
// and a flow-control-bound static allowance moves a window's credit per
// round trip, so its rate falls as 1/RTT (233.57 kbit/s at 150 ms here);
// 233.57 × 150 / 234.56 = 149.4 ms (docs/flowsim.md shows the derivation).
const StudyRTT = 149400 * time.Microsecond

// DefaultLink is study C's link: the round trip its timings fix
// (StudyRTT), and for what they leave open tlab's choice: 100 Mbit/s, no
// loss, 1350-byte packets (QUIC's usual payload under a 1500-byte MTU)
// with 50 bytes of headers, congestion control on. Every field is a
// parameter.
func DefaultLink(c Config) Config {
	c.Rate, c.OneWay, c.MSS, c.Overhead, c.Congestion = 100e6, StudyRTT/2, 1350, 50, true
	return c
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

// Scenarios are study C's three, by name. size-sweep is a family: one
// config per data size.
func Scenarios() map[string][]Config {
	small := DefaultLink(Config{Name: "small-buffer", Streams: 2, BytesPerStream: 1 * mib,
		StreamWindow: 4 * kib, StreamUpper: 16 * kib, ConnWindow: 8 * kib, ConnUpper: 64 * kib, Seed: 1})
	large := DefaultLink(Config{Name: "large-buffer", Streams: 4, BytesPerStream: 5 * mib / 4,
		StreamWindow: 8 * kib, StreamUpper: 1 * mib, ConnWindow: 32 * kib, ConnUpper: 64 * mib, Seed: 1})
	var sweep []Config
	for _, kb := range []int64{100, 200, 500, 1000, 2000, 5000, 10000} {
		c := large
		c.Name = fmt.Sprintf("size-sweep/%dKB", kb)
		c.Streams, c.BytesPerStream = 1, kb*1000
		sweep = append(sweep, c)
	}
	return map[string][]Config{"small-buffer": {small}, "large-buffer": {large}, "size-sweep": sweep}
}

// ScenarioNames lists the scenarios, sorted.
func ScenarioNames() []string {
	var names []string
	for n := range Scenarios() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
