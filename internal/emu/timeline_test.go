package emu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tlab/internal/units"
)

func dur(d time.Duration) *units.Duration { return (*units.Duration)(&d) }
func ratio(r float64) *units.Ratio        { v := units.Ratio(r); return &v }
func bitrate(r float64) *units.Bitrate    { v := units.Bitrate(r); return &v }
func count(n int) *int                    { return &n }

// The pure core against values computed by hand.
func TestScheduleRampAndStepsByHand(t *testing.T) {
	d := DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Timeline: Timeline{Steps: []TimelineStep{
		// From 10 to 50 ms over 4 s: 10 + 40·(1/4) = 20 ms at 1 s,
		// 10 + 40·(3/4) = 40 ms at 3 s.
		{At: 0, Ramp: units.Duration(4 * time.Second), Delay: dur(50 * time.Millisecond)},
		// A step without a ramp: 5 ms from 6 s on.
		{At: units.Duration(6 * time.Second), Delay: dur(5 * time.Millisecond)},
		// Back up to 25 ms over 2 s from 8 s: 5 + 20·(1/2) = 15 ms at 9 s.
		{At: units.Duration(8 * time.Second), Ramp: units.Duration(2 * time.Second), Delay: dur(25 * time.Millisecond)},
	}}}
	s := NewSchedule(d)
	for _, c := range []struct{ at, want time.Duration }{
		{0, 10 * time.Millisecond},
		{time.Second, 20 * time.Millisecond},
		{3 * time.Second, 40 * time.Millisecond},
		{4 * time.Second, 50 * time.Millisecond},
		{6*time.Second - 1, 50 * time.Millisecond},
		{6 * time.Second, 5 * time.Millisecond},
		{9 * time.Second, 15 * time.Millisecond},
		{time.Hour, 25 * time.Millisecond},
	} {
		if got := s.At(c.at).Delay; got != c.want {
			t.Errorf("delay at %v: %v, want %v", c.at, got, c.want)
		}
	}
}

// With repeat every period starts again from the direction's own values:
// a LEO handover every 15 s whose delay steps to 60 ms for its last second.
func TestScheduleRepeatStartsEachPeriodFromTheProfile(t *testing.T) {
	d := DirectionConfig{Delay: units.Duration(20 * time.Millisecond), Timeline: Timeline{
		Repeat: units.Duration(15 * time.Second),
		Steps:  []TimelineStep{{At: units.Duration(14 * time.Second), Delay: dur(60 * time.Millisecond)}},
	}}
	s := NewSchedule(d)
	for _, c := range []struct{ at, want time.Duration }{
		{13 * time.Second, 20 * time.Millisecond},
		{14 * time.Second, 60 * time.Millisecond},
		{15 * time.Second, 20 * time.Millisecond}, // 0 s into the second period
		{29 * time.Second, 60 * time.Millisecond}, // 14 s into it
		{31 * time.Second, 20 * time.Millisecond},
	} {
		if got := s.At(c.at).Delay; got != c.want {
			t.Errorf("delay at %v: %v, want %v", c.at, got, c.want)
		}
	}
}

// Every field a step can set, through DirectionConfig.At: a field a step
// leaves out keeps its value, a ramped rate is linear in bits per second.
func TestDirectionAtEveryField(t *testing.T) {
	d := DirectionConfig{Delay: units.Duration(5 * time.Millisecond), Rate: 10e6, QueuePackets: 100, Timeline: Timeline{Steps: []TimelineStep{
		{At: units.Duration(time.Second), Loss: ratio(0.05), Jitter: dur(2 * time.Millisecond)},
		// 10 → 30 Mbit/s over 2 s: 20 Mbit/s at 3 s.
		{At: units.Duration(2 * time.Second), Ramp: units.Duration(2 * time.Second), Rate: bitrate(30e6), QueuePackets: count(20)},
	}}}
	at := d.At(500 * time.Millisecond)
	if at.Loss.Model != "" || at.Jitter != 0 || at.Rate != 10e6 || at.QueuePackets != 100 {
		t.Errorf("before the first step: %+v", at)
	}
	at = d.At(3 * time.Second)
	if at.Loss.Model != LossBernoulli || at.Loss.Rate != 0.05 || at.Jitter.D() != 2*time.Millisecond || at.Delay.D() != 5*time.Millisecond {
		t.Errorf("loss and jitter at 3 s: %+v", at)
	}
	// queue 100 → 20 over 2 s: 60 at 3 s.
	if at.Rate != 20e6 || at.QueuePackets != 60 {
		t.Errorf("rate %v queue %d at 3 s, want 20Mbit and 60", at.Rate, at.QueuePackets)
	}
}

// The emulator applies a delay step to packets arriving at or after it;
// a packet that arrived before keeps its delay.
func TestDirectionDelayStepAppliesToArrivalsAfterIt(t *testing.T) {
	cfg := DirectionConfig{Delay: units.Duration(10 * time.Millisecond), Timeline: Timeline{Steps: []TimelineStep{
		{At: units.Duration(100 * time.Millisecond), Delay: dur(50 * time.Millisecond)},
	}}}
	d := mustDirection(t, cfg, 1)
	ms := int64(time.Millisecond)
	if v := admit(d, 99*ms, 100); v.Release != 109*ms {
		t.Errorf("arrival at 99 ms released at %d ns, want 109 ms", v.Release)
	}
	if v := admit(d, 100*ms, 100); v.Release != 150*ms {
		t.Errorf("arrival at 100 ms released at %d ns, want 150 ms", v.Release)
	}
}

// A rate step applies when a transmission starts: a packet queued before
// it leaves at the new rate once the transmitter reaches it.
func TestDirectionRateStepAtTransmissionStart(t *testing.T) {
	// 8 Mbit/s: 1 µs a byte, a 1000-byte frame takes 1 ms; 16 Mbit/s
	// from 1.5 ms: 0.5 ms.
	cfg := DirectionConfig{Rate: 8e6, QueuePackets: 10, Timeline: Timeline{Steps: []TimelineStep{
		{At: units.Duration(1500 * time.Microsecond), Rate: bitrate(16e6)},
	}}}
	d := mustDirection(t, cfg, 1)
	us := int64(time.Microsecond)
	got := feed(d, []arrival{{0, 1000, 0, 0}, {0, 1000, 0, 0}, {0, 1000, 0, 0}})
	// Frame 1: 0 → 1 ms. Frame 2 starts at 1 ms, before the step: 2 ms.
	// Frame 3 starts at 2 ms, after it: 2.5 ms.
	for i, want := range []int64{1000 * us, 2000 * us, 2500 * us} {
		if got[i].Release != want {
			t.Errorf("frame %d released at %d ns, want %d", i+1, got[i].Release, want)
		}
	}
}

// A loss step from none to everything: packets before it pass, packets
// after it are all lost.
func TestDirectionLossStep(t *testing.T) {
	cfg := DirectionConfig{Timeline: Timeline{Steps: []TimelineStep{{At: units.Duration(time.Second), Loss: ratio(1)}}}}
	d := mustDirection(t, cfg, 3)
	for i := range 100 {
		now := int64(i) * int64(20*time.Millisecond) // 0 to 1.98 s
		v := admit(d, now, 100)
		if want := now >= int64(time.Second); (v.Drop == DropLoss) != want {
			t.Fatalf("packet at %v: drop %v, want lost %v", time.Duration(now), v.Drop, want)
		}
	}
}

// A queue limit stepped up takes more arrivals; stepped down it refuses
// arrivals beyond it.
func TestDirectionQueueLimitStep(t *testing.T) {
	cfg := DirectionConfig{Rate: 8e6, QueuePackets: 2, Timeline: Timeline{Steps: []TimelineStep{
		{At: units.Duration(time.Microsecond), QueuePackets: count(4)},
		{At: units.Duration(5 * time.Millisecond), QueuePackets: count(1)},
	}}}
	d := mustDirection(t, cfg, 1)
	const us = 1000
	// A 1000-byte frame takes 1 ms at 8 Mbit/s. At 0 the buffer of 2
	// takes two frames (one on the wire, one waiting) and refuses the
	// third; at 1 µs the buffer of 4 takes two more. By 5 ms all four
	// have left; the buffer of 1 takes one frame and refuses the next.
	got := feed(d, []arrival{{0, 1000, 0, 0}, {0, 1000, 0, 0}, {0, 1000, 0, 0}, {us, 1000, 0, 0}, {us, 1000, 0, 0}, {5000 * us, 1000, 0, 0}, {5000 * us, 1000, 0, 0}})
	for i, want := range []DropCause{Delivered, Delivered, DropQueue, Delivered, Delivered, Delivered, DropQueue} {
		if got[i].Drop != want {
			t.Errorf("frame %d: %v, want %v", i+1, got[i].Drop, want)
		}
	}
}

func TestTimelineInAProfile(t *testing.T) {
	p, err := ParseProfile("leo.yaml", []byte(`
delay: 20ms
rate: 50Mbit
up:
  timeline:
    - {at: 5s, delay: 80ms}
    - {at: 10s, ramp: 2s, delay: 20ms, loss: 1%}
down:
  timeline:
    repeat: 15s
    steps:
      - {at: 14s, rate: 10Mbit}
`))
	if err != nil {
		t.Fatal(err)
	}
	// Every field of a ramped step ramps: 80 → 20 ms over 2 s is 50 ms
	// at 11 s, 0 → 1 % is 0.5 %.
	if got := p.Link.Up.At(11 * time.Second); got.Delay.D() != 50*time.Millisecond || got.Loss.Rate != 0.005 {
		t.Errorf("up at 11 s: delay %v loss %v, want 50ms and 0.5%%", got.Delay, got.Loss.Rate)
	}
	if got := p.Link.Down.At(29 * time.Second); got.Rate != 10e6 {
		t.Errorf("down at 29 s: rate %v, want 10Mbit", got.Rate)
	}
}

func TestTimelineErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"timeline:\n  - {at: 2s, delay: 1ms}\n  - {at: 1s, delay: 2ms}\n", "p.yaml:3: timeline: at 1s is not after"},
		{"timeline:\n  - {at: 1s, ramp: 2s, delay: 1ms}\n  - {at: 2s, delay: 2ms}\n", "p.yaml:3: timeline: at 2s is before the previous step's ramp ends (3s)"},
		{"timeline:\n  - {at: 1s}\n", "p.yaml:2: timeline: the step sets nothing"},
		{"timeline:\n  repeat: 1s\n  steps:\n    - {at: 2s, delay: 1ms}\n", "repeat 1s is shorter"},
		{"timeline:\n  - {at: 1s, speed: 3}\n", "p.yaml:2: unknown key \"speed\""},
		{"loss: {model: gilbert-elliott, rate: 1%, mean_burst: 3}\ntimeline:\n  - {at: 1s, loss: 5%}\n", "gilbert-elliott"},
		{"trace: x.trace\ntimeline:\n  - {at: 1s, rate: 5Mbit}\n", "a trace sets the rate"},
	} {
		_, err := ParseProfile("p.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
}

func TestTimelineCSV(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "series.csv")
	data := "# a delay and loss series\ntime_s,delay_ms,loss_pct,rate,ramp\n0,20,0,50Mbit,\n1.5,80,,,\n3,20,2,10Mbit,500ms\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := ParseProfile("p.yaml", []byte("timeline: {file: "+path+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	up := p.Link.Up
	if len(up.Timeline.Steps) != 3 {
		t.Fatalf("%d steps, want 3", len(up.Timeline.Steps))
	}
	// At 2 s: the second row's 80 ms, the first row's loss (0) and rate.
	if got := up.At(2 * time.Second); got.Delay.D() != 80*time.Millisecond || got.Rate != 50e6 || got.Loss.Rate != 0 {
		t.Errorf("at 2 s: %+v", got)
	}
	// At 3.25 s: halfway through the third row's 500 ms ramp:
	// 80 → 20 ms gives 50 ms, 0 → 2 % gives 1 %, 50 → 10 Mbit/s 30.
	if got := up.At(3250 * time.Millisecond); got.Delay.D() != 50*time.Millisecond || got.Loss.Rate != 0.01 || got.Rate != 30e6 {
		t.Errorf("at 3.25 s: delay %v loss %v rate %v", got.Delay, got.Loss.Rate, got.Rate)
	}
	for _, c := range []struct{ csv, want string }{
		{"time,delay\n0s,5ms\n1,6ms\n", "s.csv:3: time: \"1\" is not a duration"},
		{"delay,time\n", "s.csv:1: the first column is \"delay\""},
		{"time_s,delay_ms,speed\n", "s.csv:1: column \"speed\""},
		{"time_s,delay_ms\n0,5\n2,6\n1,7\n", "s.csv:4: at 1s is not after"},
		{"time_s,delay_ms\n0,5,7\n", "s.csv:2: 3 values for 2 columns"},
		{"time_s,loss\n0,150%\n", "s.csv:2: loss: probability"},
		{"time_s,delay_ms\n", "a header and no rows"},
	} {
		_, err := ParseTimelineCSV("s.csv", strings.NewReader(c.csv))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.csv, err, c.want)
		}
	}
}
