package emu

import (
	"strings"
	"testing"
	"time"

	"tlab/internal/units"
)

// A live change of the delay at 50 ms: a packet arriving before keeps
// 10 ms, one at or after meets 30 ms, and a repeating timeline that steps
// the delay no longer moves it.
func TestLiveSetOverridesTheTimelineFromItsTime(t *testing.T) {
	ms := int64(time.Millisecond)
	cfg := DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Timeline: Timeline{
		Repeat: units.Duration(100 * time.Millisecond),
		Steps:  []TimelineStep{{At: units.Duration(60 * time.Millisecond), Delay: dur(70 * time.Millisecond)}},
	}}
	d := mustDirection(t, cfg, 1)
	if err := d.Set(50*ms, TimelineStep{Delay: dur(30 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ at, release int64 }{
		{49 * ms, 59 * ms},   // before the change: 10 ms
		{50 * ms, 80 * ms},   // at it: 30 ms
		{65 * ms, 95 * ms},   // where the timeline said 70 ms: still 30 ms
		{170 * ms, 200 * ms}, // and in the next period
	} {
		if v := admit(d, c.at, 100); v.Release != c.release {
			t.Errorf("arrival at %d ms released at %.3f ms, want %d", c.at/ms, float64(v.Release)/float64(ms), c.release/ms)
		}
	}
}

// A live change on a direction with no timeline: loss from none to all,
// and a rate halved, each from its time.
func TestLiveSetLossAndRateWithoutATimeline(t *testing.T) {
	us := int64(time.Microsecond)
	// 8 Mbit/s: a 1000-byte frame takes 1 ms.
	d := mustDirection(t, DirectionConfig{Rate: 8e6, QueuePackets: 10}, 1)
	if v := admit(d, 0, 1000); v.Drop != Delivered || v.Release != 1000*us {
		t.Fatalf("before any change: %+v, want delivered at 1 ms", v)
	}
	if err := d.Set(2000*us, TimelineStep{Rate: bitrate(4e6)}); err != nil {
		t.Fatal(err)
	}
	// 4 Mbit/s from 2 ms: 2 ms a frame.
	if v := admit(d, 2000*us, 1000); v.Release != 4000*us {
		t.Errorf("after the rate change: released at %d µs, want 4000", v.Release/us)
	}
	if err := d.Set(5000*us, TimelineStep{Loss: ratio(1)}); err != nil {
		t.Fatal(err)
	}
	if v := admit(d, 4999*us, 1000); v.Drop != Delivered {
		t.Errorf("before the loss change: %v", v.Drop)
	}
	if v := admit(d, 5000*us, 1000); v.Drop != DropLoss {
		t.Errorf("after the loss change: %v, want lost", v.Drop)
	}
}

func TestLiveSetRefusesWhatTheDirectionCannotChange(t *testing.T) {
	d := mustDirection(t, DirectionConfig{Delay: units.Duration(time.Millisecond)}, 1)
	for _, c := range []struct {
		step TimelineStep
		want string
	}{
		{TimelineStep{Rate: bitrate(1e6)}, "no constant rate limit"},
		{TimelineStep{QueuePackets: count(5)}, "no queue"},
		{TimelineStep{}, "sets nothing"},
	} {
		if err := d.Set(0, c.step); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.step, err, c.want)
		}
	}
	ge := mustDirection(t, DirectionConfig{Loss: LossConfig{Model: LossGilbert, Rate: 0.01, MeanBurst: 3}}, 1)
	if err := ge.Set(0, TimelineStep{Loss: ratio(0.05)}); err == nil || !strings.Contains(err.Error(), "gilbert-elliott") {
		t.Errorf("a live loss on gilbert-elliott: %v", err)
	}
}

func TestParseLiveChanges(t *testing.T) {
	up, down, err := ParseLiveChanges("up.loss=5%,delay=40ms,ramp=2s")
	if err != nil {
		t.Fatal(err)
	}
	if up == nil || up.Loss == nil || *up.Loss != 0.05 || up.Delay == nil || up.Delay.D() != 40*time.Millisecond || up.Ramp.D() != 2*time.Second {
		t.Errorf("up: %+v", up)
	}
	if down == nil || down.Loss != nil || down.Delay == nil || down.Delay.D() != 40*time.Millisecond {
		t.Errorf("down: %+v", down)
	}
	if up, down, err := ParseLiveChanges("down.rate=5Mbit"); err != nil || up != nil || down == nil || *down.Rate != 5e6 {
		t.Errorf("down only: %+v %+v %v", up, down, err)
	}
	for _, c := range []struct{ in, want string }{
		{"ramp=1s", "changes nothing"},
		{"up.speed=3", "unknown key"},
		{"at=1s,delay=1ms", "give no at"},
		{"loss=150%", "outside"},
	} {
		if _, _, err := ParseLiveChanges(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}
