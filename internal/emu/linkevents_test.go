package emu

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"tlab/internal/units"
)

// A LEO-like timeline: 20 ms, a step to 60 ms at 14 s of every 15 s.
// Over 31 s that is the start, the steps at 14 s and 29 s, and the
// returns to 20 ms at 15 s and 30 s.
func TestTimelineEventsOfARepeatingTimeline(t *testing.T) {
	d := DirectionConfig{Delay: units.Duration(20 * time.Millisecond), Timeline: Timeline{
		Repeat: units.Duration(15 * time.Second),
		Steps:  []TimelineStep{{At: units.Duration(14 * time.Second), Ramp: units.Duration(time.Second), Delay: dur(60 * time.Millisecond)}},
	}}
	got := d.TimelineEvents("access", "up", 31*time.Second)
	want := []struct {
		source string
		at     time.Duration
		delay  time.Duration
	}{
		{EventStart, 0, 20 * time.Millisecond},
		{EventStep, 14 * time.Second, 60 * time.Millisecond},
		{EventRepeat, 15 * time.Second, 20 * time.Millisecond},
		{EventStep, 29 * time.Second, 60 * time.Millisecond},
		{EventRepeat, 30 * time.Second, 20 * time.Millisecond},
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if g := got[i]; g.Source != w.source || g.At != w.at || g.State.Delay != w.delay || g.Link != "access" || g.Direction != "up" {
			t.Errorf("event %d: %+v, want %s at %v to %v", i, g, w.source, w.at, w.delay)
		}
	}
	if got[1].Ramp != time.Second {
		t.Errorf("the step's ramp %v, want 1s", got[1].Ramp)
	}
	if (DirectionConfig{}).TimelineEvents("a", "up", time.Hour) != nil {
		t.Error("a direction without a timeline has events")
	}
}

func TestLinkEventsFileRoundTrip(t *testing.T) {
	events := []LinkEvent{
		{Link: "access", Direction: "down", Source: EventStart, State: TimelineState{Delay: 10 * time.Millisecond, RateBps: 50e6, QueuePackets: 100}},
		{Link: "access", Direction: "down", Source: EventStep, At: 2500 * time.Millisecond, Ramp: time.Second,
			State:  TimelineState{Delay: 80 * time.Millisecond, Jitter: time.Millisecond, Loss: 0.02, RateBps: 10e6, QueuePackets: 20, QueueBytes: 3000},
			UnixNs: 1_700_000_001_500_000_000},
	}
	var buf bytes.Buffer
	// The window started 1 s into the link's life: the step is 1.5 s into it.
	if err := WriteLinkEvents(&buf, events, time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "access,down,step,2500,1500,1000,80,1,2,10,20,3000,1700000001500000000\n") || !strings.Contains(buf.String(), "access,down,start,0,-1000,0,10,0,0,50,100,0,\n") {
		t.Errorf("the step's row is not as written by hand:\n%s", buf.String())
	}
	got, window, err := ReadLinkEvents("e.csv", &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1] != events[1] || got[0] != events[0] || window[1] != 1500*time.Millisecond || window[0] != -time.Second {
		t.Errorf("read back %+v %v", got, window)
	}
	if _, _, err := ReadLinkEvents("e.csv", strings.NewReader("link,direction\n")); err == nil || !strings.Contains(err.Error(), "e.csv:1: no column source") {
		t.Errorf("a file without the columns: %v", err)
	}
}
