package emu

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// FuzzParseTrace: no trace file makes the parser panic, and one it accepts
// is a usable schedule: non-decreasing, with a positive period.
func FuzzParseTrace(f *testing.F) {
	f.Add([]byte("1\n2\n3\n"))
	f.Add([]byte("# a comment\n0\n0\n5\n"))
	f.Add([]byte("12\n3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := ParseTrace("fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := 1; i < len(ops); i++ {
			if ops[i] < ops[i-1] {
				t.Fatalf("accepted a trace going back in time: %v", ops)
			}
		}
		if ops[len(ops)-1] <= 0 {
			t.Fatalf("accepted a trace without a period: %v", ops)
		}
		TraceMeanRate(ops)
	})
}

// FuzzParseProfile: no profile file makes the parser panic, and one it
// accepts builds a link (every model constructible).
func FuzzParseProfile(f *testing.F) {
	entries, _ := builtinProfiles.ReadDir("profiles")
	for _, e := range entries {
		b, _ := builtinProfiles.ReadFile("profiles/" + e.Name())
		f.Add(b)
	}
	f.Add([]byte("rate: 10Mbit\nqueue: {type: fq_codel, flows: 16}\nloss: {model: gilbert-elliott, rate: 1%, mean_burst: 3}\n"))
	f.Add([]byte("delay: 5ms\nup:\n  timeline:\n    repeat: 10s\n    steps:\n      - {at: 1s, ramp: 2s, delay: 50ms, rate: 5Mbit, queue_packets: 3}\n      - {at: 5s, loss: 2%, jitter: 1ms}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile("fuzz.yaml", data)
		if err != nil {
			return
		}
		if p.Link.Up.Trace != "" || p.Link.Down.Trace != "" || p.Link.Up.Timeline.File != "" || p.Link.Down.Timeline.File != "" {
			return // a trace names a file
		}
		if _, _, err := NewLink(p.Link, 1, "fuzz", nil, nil); err != nil {
			t.Fatalf("accepted a profile that builds no link: %v\n%s", err, data)
		}
	})
}

// FuzzEngineControl: the engine's side of the pipe from its parent. A
// spec line that decodes either fails Validate or builds every link it
// names; a stream of control bytes yields only known requests, each
// consuming exactly its line, and never grows without bound.
func FuzzEngineControl(f *testing.F) {
	f.Add([]byte(`{"seed":1,"mode":"busy","cpu":-1,"mtu":1500,"links":[{"name":"l0","config":{"up":{"delay":"5ms","rate":"10Mbit"},"down":{"delay":"5ms","jitter":"1ms","loss":{"model":"gilbert","rate":"1%"}}},"ports":[{"side":0,"host_mac":"AgAAAAAB"},{"side":1}]}]}`), []byte(`{"op":"stats"}`+"\n"+`{"op":"reset_lateness"}`+"\n"+`{"op":"st`))
	f.Add([]byte(`{"links":[{"ports":[{"side":7}]}]}`), []byte(`{"op":"stop","x":1}`+"\n"))
	f.Add([]byte(`{"mtu":-5}`), []byte("{}\n{}\n"))
	f.Add([]byte(`{}`), []byte(`{"op":"set","link":"l0","direction":"up","step":{"at":"0s","delay":"5ms","loss":"1%"}}`+"\n"+`{"op":"set","direction":"sideways"}`+"\n"))
	f.Fuzz(func(t *testing.T, specLine, ctrl []byte) {
		var s EngineSpec
		if json.Unmarshal(specLine, &s) == nil && s.Validate() == nil {
			for _, l := range s.Links {
				for _, p := range l.Ports {
					if p.Side != SideA && p.Side != SideB {
						t.Fatalf("a port on side %d validated", p.Side)
					}
				}
				// What the engine does next with each link: an error,
				// or two directions; never a panic.
				if up, down, err := NewLink(l.Config, s.Seed, l.Name, l.TraceUp, l.TraceDown); err == nil && (up == nil || down == nil) {
					t.Fatal("NewLink gave no error and no direction")
				}
			}
		}
		// A live change the engine accepts from the pipe is applied or
		// refused by a direction, never a panic; what it applies keeps
		// every release after its arrival.
		if req, _, ok, err := nextRequest(ctrl); err == nil && ok && req.Op == "set" {
			d, err := NewDirection(DirectionConfig{Rate: 10e6, Delay: 1000}, 1000, 1, "fuzz/up", nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.Set(5, *req.Step) == nil {
				d.Offer(10, Frame{Size: 1000}, func(_ int32, v Verdict) {
					if v.Drop == Delivered && v.Release < 10 {
						t.Fatalf("released at %d before its arrival at 10", v.Release)
					}
				})
				d.Transmit(math.MaxInt64, func(int32, Verdict) {})
			}
		}
		buf := ctrl
		for range 100 {
			op, rest, ok, err := nextControl(buf)
			if err != nil || !ok {
				if err == nil && len(buf) > maxControlLine {
					t.Fatalf("%d bytes without a newline kept waiting", len(buf))
				}
				break
			}
			if op != "stats" && op != "reset_lateness" && op != "stop" && op != "set" {
				t.Fatalf("op %q accepted", op)
			}
			if i := bytes.IndexByte(buf, '\n'); !bytes.Equal(rest, buf[i+1:]) {
				t.Fatal("a request consumed more or less than its line")
			}
			buf = rest
		}
	})
}

// FuzzParseTimelineCSV: no CSV series makes the reader panic, and one it
// accepts is a timeline in time order that a direction follows: every
// packet it offers is released no earlier than it arrived.
func FuzzParseTimelineCSV(f *testing.F) {
	f.Add([]byte("time_s,delay_ms,loss_pct,rate_mbit,ramp\n0,20,0,50,\n1.5,80,,,\n3,20,2,10,500ms\n"))
	f.Add([]byte("# comment\ntime,jitter,queue_packets,queue_bytes\n0s,1ms,5,\n1s,,,3000B\n"))
	f.Add([]byte("time,delay\n\"1s\",\"5ms\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		steps, err := ParseTimelineCSV("fuzz.csv", bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := 1; i < len(steps); i++ {
			if steps[i].At <= steps[i-1].At {
				t.Fatalf("accepted steps going back in time: %v then %v", steps[i-1].At, steps[i].At)
			}
		}
		cfg := DirectionConfig{Rate: 10e6, Timeline: Timeline{Steps: steps}}
		d, err := NewDirection(cfg, int64(time.Millisecond), 1, "fuzz/up", nil)
		if err != nil {
			t.Fatalf("accepted a series no direction follows: %v", err)
		}
		last := steps[len(steps)-1].At.D() + steps[len(steps)-1].Ramp.D()
		emit := func(_ int32, v Verdict) {}
		for i := range int64(50) {
			now := int64(last) / 50 * i
			d.Offer(now, Frame{Size: 1000}, func(_ int32, v Verdict) {
				if v.Drop == Delivered && v.Release < now {
					t.Fatalf("released at %d before its arrival at %d", v.Release, now)
				}
			})
		}
		d.Transmit(math.MaxInt64, emit)
	})
}

// FuzzReadLinkEvents: a link-events file from elsewhere (a received run)
// never makes the reader panic, and what it accepts has a window time for
// every event.
func FuzzReadLinkEvents(f *testing.F) {
	var buf bytes.Buffer
	WriteLinkEvents(&buf, []LinkEvent{{Link: "l", Direction: "up", Source: EventStep, At: time.Second, State: TimelineState{Delay: time.Millisecond}}}, 0)
	f.Add(buf.Bytes())
	f.Add([]byte("link,direction,source,link_ms,window_ms,ramp_ms,delay_ms,jitter_ms,loss_pct,rate_mbit,queue_packets,queue_bytes\nl,up,step,NaN,0,0,0,0,0,0,0,0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		events, window, err := ReadLinkEvents("fuzz.csv", bytes.NewReader(data))
		if err == nil && len(events) != len(window) {
			t.Fatalf("%d events and %d window times", len(events), len(window))
		}
	})
}
