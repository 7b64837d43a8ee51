package main

import (
	"strings"
	"testing"

	"tlab/internal/emu"
	"tlab/internal/units"
)

// TestQueueStringSaysWhatTheEngineBuilds: tlab profiles shows the queue
// emu.NewDirection gives a direction: a rate trace without a queue gets
// one bandwidth-delay product (it showed "none"), a discipline with a
// default buffer its default (it showed a BDP in bytes), and both bounds
// when both are given.
func TestQueueStringSaysWhatTheEngineBuilds(t *testing.T) {
	link := emu.LinkConfig{Up: emu.DirectionConfig{Delay: units.Duration(10e6)}, Down: emu.DirectionConfig{Delay: units.Duration(10e6)}}
	for _, c := range []struct {
		d    emu.DirectionConfig
		want string
	}{
		{emu.DirectionConfig{}, "none (no rate limit)"},
		{emu.DirectionConfig{Trace: "up.trace"}, "one bandwidth-delay product at the trace's mean rate"},
		{emu.DirectionConfig{Rate: units.Bitrate(10e6), Queue: emu.QueueConfig{Type: emu.CoDelName}}, "1000 packets (codel's default)"},
		{emu.DirectionConfig{Rate: units.Bitrate(10e6)}, "25000 bytes (one bandwidth-delay product)"},
		{emu.DirectionConfig{Rate: units.Bitrate(10e6), QueuePackets: 50, QueueBytes: units.Size(10000)}, "50 packets and 10000 bytes"},
	} {
		if got := queueString(c.d, link); !strings.HasPrefix(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.d, got, c.want)
		}
	}
}
