package workload

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLostEventsOnTheCellsClock: a lost event (no answer) is placed by
// when it was sent, like any other. The cell's client ran from t0 to
// t0+5 s with a 1 s warm-up and 1 s of slack either side:
//   - lost at 0.5 s: in the warm-up (sent before 1 s), so warm-up, not a
//     measured loss (it has no answer time to place it by instead);
//   - lost at 2 s: measured, "no answer";
//   - lost at 6.5 s, after the end and its slack: not this cell's.
func TestLostEventsOnTheCellsClock(t *testing.T) {
	start, end := t0, t0.Add(5*time.Second)
	recs, err := EventsToRecords([]Event{
		{Seq: 0, SentNs: ns(500 * time.Millisecond), Error: "lost (irtt: true)"},
		{Seq: 1, SentNs: ns(2 * time.Second)},
	}, start, end, time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !recs[0].Warmup || recs[0].Error != "lost (irtt: true)" || recs[0].SentMs != 500 {
		t.Errorf("lost in the warm-up: %+v, want warm-up, its error, sent at 500 ms", recs[0])
	}
	if recs[1].Warmup || recs[1].Error != "no answer" || recs[1].SentMs != 2000 {
		t.Errorf("lost after the warm-up: %+v, want measured, no answer, sent at 2000 ms", recs[1])
	}
	if _, err := EventsToRecords([]Event{{Seq: 7, SentNs: ns(6500 * time.Millisecond), Error: "timeout"}}, start, end, 0, time.Second); err == nil || !strings.Contains(err.Error(), "event 7 is 1500.0 ms after the cell's client ended") {
		t.Errorf("lost 1.5 s after the end: %v, want refused, 1500 ms after", err)
	}
}

// TestSlackAroundTheCell: an event within the slack of the client's start
// or end is the cell's (clocks and process start differ by that much); a
// step beyond is not. Slack 1 s, client from t0 to t0+5 s:
//   - sent 0.5 s before the start: kept, at −500 ms;
//   - sent 1.5 s before: refused, "1500.0 ms before";
//   - answered 0.5 s after the end: kept;
//   - with slack 0.2 s, the first is refused too.
func TestSlackAroundTheCell(t *testing.T) {
	start, end := t0, t0.Add(5*time.Second)
	early := Event{Seq: 0, SentNs: ns(-500 * time.Millisecond), DoneNs: ns(-490 * time.Millisecond)}
	late := Event{Seq: 1, SentNs: ns(4900 * time.Millisecond), DoneNs: ns(5500 * time.Millisecond)}
	recs, err := EventsToRecords([]Event{early, late}, start, end, 0, time.Second)
	if err != nil {
		t.Fatalf("within the slack: %v", err)
	}
	if recs[0].SentMs != -500 || recs[0].DelayMs != 10 || recs[1].DelayMs != 600 {
		t.Errorf("records %+v, want sent at −500 ms answered in 10, then 600 ms", recs)
	}
	tooEarly := Event{Seq: 2, SentNs: ns(-1500 * time.Millisecond), DoneNs: ns(-1400 * time.Millisecond)}
	if _, err := EventsToRecords([]Event{tooEarly}, start, end, 0, time.Second); err == nil || !strings.Contains(err.Error(), "event 2 was sent 1500.0 ms before") {
		t.Errorf("1.5 s before the start with 1 s of slack: %v", err)
	}
	if _, err := EventsToRecords([]Event{early}, start, end, 0, 200*time.Millisecond); err == nil {
		t.Error("0.5 s before the start with 0.2 s of slack was accepted")
	}
	if _, err := EventsToRecords([]Event{late}, start, end, 0, 200*time.Millisecond); err == nil {
		t.Error("answered 0.5 s after the end with 0.2 s of slack was accepted")
	}
}

// TestIperf3ClockAndError: iperf3 -J gives the test's start in whole Unix
// seconds (start.timestamp.timesecs) and each interval's span in seconds
// from it; the events are on this machine's clock, so the interval from
// 1.5 to 2.5 s of a test started at t0 was sent at t0+1.5 s and done at
// t0+2.5 s. A run iperf3 itself failed carries its "error": that is the
// error, not an empty list of intervals.
func TestIperf3ClockAndError(t *testing.T) {
	data := fmt.Sprintf(`{"start":{"timestamp":{"timesecs":%d}},"intervals":[{"sum":{"start":0,"end":1.5,"bytes":1000}},{"sum":{"start":1.5,"end":2.5,"bytes":2000}}]}`, t0.Unix())
	got, err := ParseEvents(EventsIperf3, "iperf3.json", strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Seq: 0, SentNs: ns(0), DoneNs: ns(1500 * time.Millisecond), RespBytes: 1000},
		{Seq: 1, SentNs: ns(1500 * time.Millisecond), DoneNs: ns(2500 * time.Millisecond), RespBytes: 2000},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("iperf3 intervals:\n got %+v\nwant %+v", got, want)
	}
	failed := `{"start":{},"intervals":[],"error":"unable to connect to server: Connection refused"}`
	if _, err := ParseEvents(EventsIperf3, "iperf3.json", strings.NewReader(failed)); err == nil || !strings.Contains(err.Error(), "iperf3.json: iperf3: unable to connect to server") {
		t.Errorf("iperf3's own error: %v, want it passed on", err)
	}
}
