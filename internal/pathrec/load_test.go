package pathrec

import (
	"math"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/remote"
	"tlab/internal/units"
)

// TestLoadShowsTheBufferAndItsDiscipline records paths made in the
// emulator with the loaded phase, each direction loaded at 15 Mbit/s for
// 3 s, and checks what the fit reads and the profile replays:
//   - a 10 Mbit/s drop-tail buffer of 50 packets overflows: its size is
//     measured (50 frames of 1242 bytes, 62 kB, 50 ms at 10 Mbit/s) and
//     replayed as queue_bytes;
//   - FQ-CoDel with ECN, the load and the probes in one flow (one socket,
//     as tlab record sends them): CoDel marks the load's ECT packets
//     instead of dropping them (RFC 8289), the load does not answer, so
//     nothing is lost and the queue grows by the excess, 5 of 15 Mbit/s:
//     a probe sent t into the load waits 0.5·t, over the phase's second
//     half (1.5–3 s) a median of 1.125 s; the fit names fq_codel with ECN;
//   - PIE with ECN marks only while its probability is at most 10 %
//     (RFC 8033) and the load needs a third dropped: it drops (a third
//     of 15 Mbit/s over 10: 33 %), marks a little while ramping, and
//     holds the delay under its 15 ms target; the fit names pie;
//   - a 5000-packet buffer takes the load's excess (1.9 MB in 3 s)
//     without dropping: its size is a lower bound, said so;
//   - a 100 Mbit/s direction carries the load whole: nothing is said of
//     its buffer, and the replay keeps the default queue.
func TestLoadShowsTheBufferAndItsDiscipline(t *testing.T) {
	dir := func(rate float64, q emu.DirectionConfig) emu.DirectionConfig {
		q.Delay, q.Rate = ms(10), units.Bitrate(rate)
		return q
	}
	p := pathSpec{
		up:     dir(10e6, emu.DirectionConfig{QueuePackets: 50}),
		down:   dir(10e6, emu.DirectionConfig{Queue: emu.QueueConfig{Type: "fq_codel", ECN: true}}),
		loadUp: 15e6, loadDown: 15e6, loadFor: 3 * time.Second,
	}
	f, err := recordThrough(t, p, 10*time.Second).Fit()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(f.Up.Load.describe("up"))
	t.Log(f.Down.Load.describe("down"))
	up, down := f.Up.Load, f.Down.Load
	if !up.Ran || !up.Filled || up.ECN || math.Abs(float64(up.BufferBytes)-62100)/62100 > 0.15 {
		t.Errorf("up, drop-tail of 50 packets: ran %v, filled %v, ECN %v, buffer %d bytes; want filled, no ECN, about 62100", up.Ran, up.Filled, up.ECN, up.BufferBytes)
	}
	if math.Abs(up.DeliveredBps-10e6)/10e6 > 0.05 || up.LossPct < 25 || up.LossPct > 40 {
		t.Errorf("up: delivered %.2f Mbit/s of 15, lost %.1f %%; want 10 and about a third", up.DeliveredBps/1e6, up.LossPct)
	}
	if !down.Ran || !down.ECN || down.Queue != "fq_codel" || down.CEPct < 1 || down.LossPct > 0.5 || !(math.Abs(down.AddedMs-1125) <= 0.1*1125) {
		t.Errorf("down, FQ-CoDel with ECN: ECN %v, queue %q, %.1f %% marked, %.1f %% lost, %.1f ms added; want fq_codel marking, nothing lost, about 1125 ms", down.ECN, down.Queue, down.CEPct, down.LossPct, down.AddedMs)
	}
	pie := pathSpec{
		up:       dir(20e6, emu.DirectionConfig{QueuePackets: 1000}),
		down:     dir(10e6, emu.DirectionConfig{Queue: emu.QueueConfig{Type: "pie", ECN: true}}),
		loadDown: 15e6, loadFor: 3 * time.Second,
	}
	pf, err := recordThrough(t, pie, 10*time.Second).Fit()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(pf.Down.Load.describe("down"))
	if d := pf.Down.Load; !d.Ran || !d.ECN || d.Queue != "pie" || d.CEPct <= 0 || !(math.Abs(d.LossPct-100.0/3) <= 3) || d.AddedMs > 15 {
		t.Errorf("down, PIE with ECN: ECN %v, queue %q, %.2f %% marked, %.1f %% lost, %.1f ms added; want pie, a third lost, under 15 ms", d.ECN, d.Queue, d.CEPct, d.LossPct, d.AddedMs)
	}
	yaml, _ := f.Profile("loaded", "192.0.2.1:7447", recordThrough(t, p, 10*time.Second), t.TempDir())
	prof, err := emu.ParseProfile("loaded.yaml", yaml)
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	if q := prof.Link.Up.QueueBytes; math.Abs(float64(q)-62100)/62100 > 0.15 || prof.Link.Up.Queue.Type != "" {
		t.Errorf("up replays queue_bytes %v, queue %q; want about 62100 bytes, drop-tail", q, prof.Link.Up.Queue.Type)
	}
	if q := prof.Link.Down.Queue; q.Type != "fq_codel" || !q.ECN {
		t.Errorf("down replays queue %+v; want fq_codel with ECN", q)
	}
	if !strings.Contains(string(yaml), "Under load") {
		t.Errorf("the profile's source does not say what the load found:\n%s", yaml)
	}

	deep := pathSpec{
		up:     dir(10e6, emu.DirectionConfig{QueuePackets: 5000}),
		down:   dir(100e6, emu.DirectionConfig{QueuePackets: 1000}),
		loadUp: 15e6, loadDown: 15e6, loadFor: 3 * time.Second,
	}
	f, err = recordThrough(t, deep, 10*time.Second).Fit()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(f.Up.Load.describe("up"))
	t.Log(f.Down.Load.describe("down"))
	if up := f.Up.Load; !up.Saturated || up.Filled || up.LossPct > 0.5 || up.BufferBytes < 500_000 {
		t.Errorf("up, a 5000-packet buffer: saturated %v, filled %v, lost %.2f %%, buffer %d bytes; want saturated, not filled, a lower bound over 500 kB", up.Saturated, up.Filled, up.LossPct, up.BufferBytes)
	}
	if down := f.Down.Load; down.Saturated || down.queueYAML() != "" {
		t.Errorf("down, 100 Mbit/s under a 15 Mbit/s load: saturated %v, replayed queue %q; want neither", down.Saturated, down.queueYAML())
	}

	// A rate that alternates 5 and 20 Mbit/s every half second, behind a
	// drop-tail buffer of 60 packets (74.5 kB): a delay times an average
	// rate misses the bytes by the rate's swing; what crossed while a probe
	// waited does not.
	var swing []float64
	for range 30 {
		swing = append(swing, 5, 20)
	}
	ops := traceOps(t, swing, 0, 0)
	for i := range ops {
		ops[i] /= 2 // half-second levels
	}
	varying := pathSpec{
		up:      dir(20e6, emu.DirectionConfig{QueuePackets: 1000}),
		down:    emu.DirectionConfig{Delay: ms(10), Trace: "swing", QueuePackets: 60},
		downOps: ops,
		loadUp:  1e6, loadDown: 18e6, loadFor: 3 * time.Second,
	}
	f, err = recordThrough(t, varying, 10*time.Second).Fit()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(f.Down.Load.describe("down"))
	if down := f.Down.Load; !down.Filled || math.Abs(float64(down.BufferBytes)-74520)/74520 > 0.2 {
		t.Errorf("down, 60 packets behind a swinging rate: filled %v, buffer %d bytes; want filled, about 74520", down.Filled, down.BufferBytes)
	}
}

// TestLoadDisciplineByHowItMarked: loadFit's rule for an ECN-marking
// queue, on counts worked by hand (1000 load packets sent, as many
// probes waiting 10 ms over a rest of 10 ms):
//   - 6 of 1000 marked (0.6 %), none lost: it marked rather than
//     dropped, as CoDel does for an ECT packet (RFC 8289, 5): fq_codel,
//     although it marked under 1 %;
//   - 3 of 667 arrivals marked (0.45 %) and 333 of 1000 lost (33 %): it
//     dropped far more than it marked, as PIE does once its probability
//     passes 10 % (RFC 8033, 5.1): pie;
//   - 2 marked (0.2 %), 4 lost (0.4 %): under half a per cent either way,
//     the queue did not fill, so no discipline is read from it.
func TestLoadDisciplineByHowItMarked(t *testing.T) {
	probes := make([]loadedProbe, 8)
	for i := range probes {
		probes[i] = loadedProbe{arriveNs: int64(i) * 1e6, owd: 20}
	}
	for _, c := range []struct {
		name             string
		sent, got, ce    int
		filled, ecn      bool
		queue            string
		lossPct, cePctIn float64
	}{
		{"marks, no loss", 1000, 1000, 6, true, true, "fq_codel", 0, 0.6},
		{"drops a third", 1000, 667, 3, true, true, "pie", 33.3, 0.45},
		{"not filled", 1000, 996, 2, false, false, "", 0.4, 0.2},
	} {
		run := LoadRun{OfferedBps: 15e6, Sent: c.sent, Got: remote.LoadReport{Packets: c.got, Bytes: c.got * LoadSize, CE: c.ce, FirstNs: 0, LastNs: 1e9}}
		f := loadFit(run, probes, 10)
		if f.Filled != c.filled || f.ECN != c.ecn || f.Queue != c.queue || !(math.Abs(f.LossPct-c.lossPct) > 0.05 || math.Abs(f.CEPct-c.cePctIn) <= 0.01) {
			t.Errorf("%s: filled %v, ECN %v, queue %q, lost %.2f %%, marked %.2f %%; want %v, %v, %q, %.2f %%, %.2f %%",
				c.name, f.Filled, f.ECN, f.Queue, f.LossPct, f.CEPct, c.filled, c.ecn, c.queue, c.lossPct, c.cePctIn)
		}
	}
}
