package flowsim

import (
	"fmt"
	"sort"
	"time"
)

// DefaultLink is the link tlab chose for study C, which does not state its
// own: 100 Mbit/s, 20 ms RTT, no loss, 1350-byte packets (QUIC's usual
// payload under a 1500-byte MTU) with 50 bytes of headers, congestion
// control on. Every field is a parameter.
func DefaultLink(c Config) Config {
	c.Rate, c.OneWay, c.MSS, c.Overhead, c.Congestion = 100e6, 10*time.Millisecond, 1350, 50, true
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
