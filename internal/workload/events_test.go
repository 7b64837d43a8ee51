package workload

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func ns(d time.Duration) int64 { return t0.Add(d).UnixNano() }

// TestEventsFromEveryFormat: the same three messages (one answered in
// 10 ms, one in 12 ms, one lost) read alike from tlab's JSON lines and
// CSV and from irtt's own JSON; iperf3's intervals read as byte counts.
func TestEventsFromEveryFormat(t *testing.T) {
	want := []Event{
		{Seq: 0, SentNs: ns(0), DoneNs: ns(10 * time.Millisecond), ReqBytes: 112, RespBytes: 112},
		{Seq: 1, SentNs: ns(10 * time.Millisecond), DoneNs: ns(22 * time.Millisecond), ReqBytes: 112, RespBytes: 112},
		{Seq: 2, SentNs: ns(20 * time.Millisecond), ReqBytes: 112, Error: "lost (irtt: true_down)"},
	}
	var jsonl, csv bytes.Buffer
	fmt.Fprintln(&csv, strings.Join(EventColumns, ","))
	for _, e := range want {
		fmt.Fprintf(&jsonl, `{"seq":%d,"sent_ns":%d,"done_ns":%d,"req_bytes":%d,"resp_bytes":%d,"error":%q}`+"\n", e.Seq, e.SentNs, e.DoneNs, e.ReqBytes, e.RespBytes, e.Error)
		fmt.Fprintf(&csv, "%d,%d,%d,%d,%d,%s\n", e.Seq, e.SentNs, e.DoneNs, e.ReqBytes, e.RespBytes, e.Error)
	}
	irtt := fmt.Sprintf(`{"config":{"length":112},"round_trips":[
 {"seqno":0,"lost":"false","timestamps":{"client":{"send":{"wall":%d},"receive":{"wall":%d}}}},
 {"seqno":1,"lost":"false","timestamps":{"client":{"send":{"wall":%d},"receive":{"wall":%d}}}},
 {"seqno":2,"lost":"true_down","timestamps":{"client":{"send":{"wall":%d},"receive":{}}}}]}`,
		want[0].SentNs, want[0].DoneNs, want[1].SentNs, want[1].DoneNs, want[2].SentNs)
	for format, data := range map[string]string{EventsJSONL: jsonl.String(), EventsCSV: csv.String(), EventsIrtt: irtt} {
		got, err := ParseEvents(format, "events", strings.NewReader(data))
		if err != nil {
			t.Errorf("%s: %v", format, err)
			continue
		}
		if format != EventsIrtt {
			want[2].Error = "lost (irtt: true_down)"
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %+v\nwant %+v", format, got, want)
		}
	}
	iperf := fmt.Sprintf(`{"start":{"timestamp":{"timesecs":%d}},"intervals":[{"sum":{"start":0,"end":1.0,"bytes":2500000}},{"sum":{"start":1.0,"end":2.0,"bytes":2400000}}]}`, t0.Unix())
	got, err := ParseEvents(EventsIperf3, "iperf3.json", strings.NewReader(iperf))
	if err != nil || len(got) != 2 || got[1].RespBytes != 2400000 || got[1].DoneNs-got[1].SentNs != int64(time.Second) {
		t.Errorf("iperf3: %+v, %v", got, err)
	}
}

// TestBadEventsSayWhere: an event that cannot be (a reply before its
// request, no send time, an unknown key, a bad number) is refused with
// the file and line.
func TestBadEventsSayWhere(t *testing.T) {
	for _, c := range []struct{ format, data, want string }{
		{EventsJSONL, `{"seq":1,"sent_ns":100,"done_ns":50}`, "ev:1: event 1: its reply (50) came before its request (100)"},
		{EventsJSONL, "\n" + `{"seq":1,"done_ns":50}`, "ev:2: event 1 has no send time"},
		{EventsJSONL, `{"seq":1,"sent_ns":100,"latency":3}`, `ev:1: json: unknown field "latency"`},
		{EventsCSV, "seq,sent_ns,done_ns\n1,100,200\n2,abc,300\n", `ev:3: sent_ns "abc" is not a whole number`},
		{EventsCSV, "seq,done_ns\n1,200\n", "ev:1: no column sent_ns"},
		{EventsIrtt, `{"round_trips":[{"seqno":0,"lost":"maybe"}]}`, `round trip 0: lost "maybe"`},
		{"xml", "", `events format "xml"`},
	} {
		if _, err := ParseEvents(c.format, "ev", strings.NewReader(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want %q", c.format, c.data, err, c.want)
		}
	}
}

// TestEventsThatDoNotFitTheCell: records are on the cell's clock (ms from
// the client's start), warm-up marked by time; an event sent before the
// client started or answered after it ended is refused, as is no event.
func TestEventsThatDoNotFitTheCell(t *testing.T) {
	start, end := t0, t0.Add(5*time.Second)
	evs := []Event{{Seq: 1, SentNs: ns(1500 * time.Millisecond), DoneNs: ns(1510 * time.Millisecond)}, {Seq: 0, SentNs: ns(500 * time.Millisecond), DoneNs: ns(512 * time.Millisecond)},
		{Seq: 2, SentNs: ns(2 * time.Second), Error: ""}}
	recs, err := EventsToRecords(evs, start, end, time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].Seq != 0 || !recs[0].Warmup || recs[0].DelayMs != 12 || recs[0].SentMs != 500 {
		t.Errorf("first record %+v", recs[0])
	}
	if recs[1].Warmup || recs[1].DelayMs != 10 {
		t.Errorf("second record %+v", recs[1])
	}
	if recs[2].Error != "no answer" {
		t.Errorf("an event with no answer: %+v", recs[2])
	}
	for name, bad := range map[string]Event{
		"before the start": {Seq: 5, SentNs: ns(-2 * time.Second), DoneNs: ns(-time.Second)},
		"after the end":    {Seq: 6, SentNs: ns(4 * time.Second), DoneNs: ns(7 * time.Second)},
	} {
		if _, err := EventsToRecords([]Event{bad}, start, end, 0, time.Second); err == nil || !strings.Contains(err.Error(), "not this cell's clock") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := EventsToRecords(nil, start, end, 0, time.Second); err == nil {
		t.Error("no events were accepted")
	}
}

// TestTemplates: a template may use the fixed placeholders and the
// workload's parameters (with _ms and _s for durations, _bytes for
// sizes); an unknown one is an error naming it.
func TestTemplates(t *testing.T) {
	params := map[string]string{"interval": "25ms", "payload": "256", "name": "a b"}
	if err := CheckTemplate("c --to {server} -i {workload.interval_ms} -l {workload.payload_bytes} -o {events}", params); err != nil {
		t.Error(err)
	}
	if err := CheckTemplate("c {workload.intervall}", params); err == nil || !strings.Contains(err.Error(), "unknown placeholder {workload.intervall}") {
		t.Errorf("a typo: %v", err)
	}
}

// FuzzParseEvents: no events file, in any format, crashes the parser, and
// what it accepts holds no event answered before it was sent.
func FuzzParseEvents(f *testing.F) {
	f.Add(EventsJSONL, `{"seq":1,"sent_ns":100,"done_ns":200,"req_bytes":1,"resp_bytes":2,"error":""}`)
	f.Add(EventsCSV, "seq,sent_ns,done_ns,req_bytes,resp_bytes,error\n1,100,200,1,2,\n")
	f.Add(EventsIrtt, `{"config":{"length":60},"round_trips":[{"seqno":0,"lost":"false","timestamps":{"client":{"send":{"wall":5},"receive":{"wall":9}}}}]}`)
	f.Add(EventsIperf3, `{"start":{"timestamp":{"timesecs":1}},"intervals":[{"sum":{"start":0,"end":1,"bytes":10}}]}`)
	f.Fuzz(func(t *testing.T, format, data string) {
		evs, err := ParseEvents(format, "fuzz", strings.NewReader(data))
		if err != nil {
			return
		}
		for _, e := range evs {
			if e.check() != nil {
				t.Fatalf("accepted %+v", e)
			}
		}
	})
}
