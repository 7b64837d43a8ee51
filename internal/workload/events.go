package workload

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"tlab/internal/results"
)

// Event formats a stack given as commands may report its messages in:
// tlab's own JSON lines or CSV, or a real tool's own output.
const (
	EventsJSONL  = "jsonl"
	EventsCSV    = "csv"
	EventsIrtt   = "irtt"   // irtt client -o FILE.json: one event per round trip
	EventsIperf3 = "iperf3" // iperf3 -J: one event per interval (bytes, not a message)
)

// EventFormats lists the formats, the default first.
func EventFormats() []string { return []string{EventsJSONL, EventsCSV, EventsIrtt, EventsIperf3} }

// MaxEvents bounds the events one file may hold (as records per cell).
const MaxEvents = MaxRecordsPerCell

// maxEventsFile bounds what is read of an events file.
const maxEventsFile = 1 << 30

// Event is one message a client reported: when it was sent and when its
// answer came (zero: never), with their sizes, or the error that ended it.
// Times are Unix nanoseconds on this machine's clock (client and server
// hosts share it).
type Event struct {
	Seq       int    `json:"seq"`
	SentNs    int64  `json:"sent_ns"`
	DoneNs    int64  `json:"done_ns"`
	ReqBytes  int    `json:"req_bytes"`
	RespBytes int    `json:"resp_bytes"`
	Error     string `json:"error"`
}

// EventColumns are tlab's events CSV's columns (the JSON lines' keys).
var EventColumns = []string{"seq", "sent_ns", "done_ns", "req_bytes", "resp_bytes", "error"}

// ParseEvents reads a client's events in format. name is the file's name
// for errors, which say the line (or the round trip) that is wrong.
func ParseEvents(format, name string, r io.Reader) ([]Event, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxEventsFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxEventsFile {
		return nil, fmt.Errorf("%s: over %d bytes of events", name, maxEventsFile)
	}
	var evs []Event
	switch format {
	case EventsJSONL, "":
		evs, err = parseJSONLEvents(name, data)
	case EventsCSV:
		evs, err = parseCSVEvents(name, data)
	case EventsIrtt:
		evs, err = parseIrttEvents(name, data)
	case EventsIperf3:
		evs, err = parseIperf3Events(name, data)
	default:
		return nil, fmt.Errorf("events format %q: want one of %s", format, strings.Join(EventFormats(), ", "))
	}
	if err != nil {
		return nil, err
	}
	if len(evs) > MaxEvents {
		return nil, fmt.Errorf("%s: %d events, more than a cell may hold (%d)", name, len(evs), MaxEvents)
	}
	return evs, nil
}

func parseJSONLEvents(name string, data []byte) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var e Event
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s:%d: %v (want {\"seq\":1,\"sent_ns\":...,\"done_ns\":...,\"req_bytes\":...,\"resp_bytes\":...,\"error\":\"\"})", name, line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%s:%d: more than one event on the line", name, line)
		}
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	return out, nil
}

func parseCSVEvents(name string, data []byte) ([]Event, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s:1: %v", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"seq", "sent_ns", "done_ns"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s:1: no column %s (want %s)", name, need, strings.Join(EventColumns, ","))
		}
	}
	var out []Event
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			// A csv.ParseError says its own line; FieldPos knows no
			// field of a record that failed.
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		line, _ := cr.FieldPos(0)
		get := func(c string) string {
			if i, ok := col[c]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		var e Event
		for _, f := range []struct {
			name string
			dst  *int64
		}{{"sent_ns", &e.SentNs}, {"done_ns", &e.DoneNs}} {
			if v := get(f.name); v != "" {
				if *f.dst, err = strconv.ParseInt(v, 10, 64); err != nil {
					return nil, fmt.Errorf("%s:%d: %s %q is not a whole number of nanoseconds", name, line, f.name, v)
				}
			}
		}
		for _, f := range []struct {
			name string
			dst  *int
		}{{"seq", &e.Seq}, {"req_bytes", &e.ReqBytes}, {"resp_bytes", &e.RespBytes}} {
			if v := get(f.name); v != "" {
				if *f.dst, err = strconv.Atoi(v); err != nil {
					return nil, fmt.Errorf("%s:%d: %s %q is not a whole number", name, line, f.name, v)
				}
			}
		}
		e.Error = get("error")
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		out = append(out, e)
	}
}

// check refuses an event that cannot be: negative sizes, no send time, an
// answer before its request.
func (e Event) check() error {
	switch {
	case e.Seq < 0:
		return fmt.Errorf("seq %d is negative", e.Seq)
	case e.SentNs <= 0:
		return fmt.Errorf("event %d has no send time (sent_ns, Unix nanoseconds)", e.Seq)
	case e.DoneNs != 0 && e.DoneNs < e.SentNs:
		return fmt.Errorf("event %d: its reply (%d) came before its request (%d)", e.Seq, e.DoneNs, e.SentNs)
	case e.ReqBytes < 0 || e.RespBytes < 0:
		return fmt.Errorf("event %d: negative size", e.Seq)
	}
	return nil
}

// irttOutput is what is read of irtt's JSON: its packet length and each
// round trip's wall-clock times.
type irttOutput struct {
	Config struct {
		Length int `json:"length"`
	} `json:"config"`
	RoundTrips []struct {
		Seq        int    `json:"seqno"`
		Lost       string `json:"lost"`
		Timestamps struct {
			Client struct {
				Send    struct{ Wall int64 } `json:"send"`
				Receive struct{ Wall int64 } `json:"receive"`
			} `json:"client"`
		} `json:"timestamps"`
	} `json:"round_trips"`
}

func parseIrttEvents(name string, data []byte) ([]Event, error) {
	var o irttOutput
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%s: not irtt's JSON (irtt client -o FILE.json): %v", name, err)
	}
	out := make([]Event, 0, len(o.RoundTrips))
	for i, rt := range o.RoundTrips {
		e := Event{Seq: rt.Seq, SentNs: rt.Timestamps.Client.Send.Wall, ReqBytes: o.Config.Length}
		switch rt.Lost {
		case "false", "":
			e.DoneNs, e.RespBytes = rt.Timestamps.Client.Receive.Wall, o.Config.Length
		case "true", "true_up", "true_down":
			e.Error = "lost (irtt: " + rt.Lost + ")"
		default:
			return nil, fmt.Errorf("%s: round trip %d: lost %q", name, i, rt.Lost)
		}
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("%s: round trip %d: %v", name, i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// iperf3Output is what is read of iperf3 -J: the test's start and each
// interval's span and bytes.
type iperf3Output struct {
	Start struct {
		Timestamp struct {
			Timesecs int64 `json:"timesecs"`
		} `json:"timestamp"`
	} `json:"start"`
	Intervals []struct {
		Sum struct {
			Start float64 `json:"start"`
			End   float64 `json:"end"`
			Bytes float64 `json:"bytes"`
		} `json:"sum"`
	} `json:"intervals"`
	Error string `json:"error"`
}

func parseIperf3Events(name string, data []byte) ([]Event, error) {
	var o iperf3Output
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("%s: not iperf3's JSON (iperf3 -J): %v", name, err)
	}
	if o.Error != "" {
		return nil, fmt.Errorf("%s: iperf3: %s", name, o.Error)
	}
	base := time.Unix(o.Start.Timestamp.Timesecs, 0).UnixNano()
	out := make([]Event, 0, len(o.Intervals))
	for i, iv := range o.Intervals {
		s := iv.Sum
		if math.IsNaN(s.Start) || math.IsNaN(s.End) || s.Bytes < 0 || s.Bytes > math.MaxInt32 || s.Start < 0 || s.End > 1e7 {
			return nil, fmt.Errorf("%s: interval %d: start %g, end %g, %g bytes", name, i, s.Start, s.End, s.Bytes)
		}
		e := Event{Seq: i, SentNs: base + int64(s.Start*1e9), DoneNs: base + int64(s.End*1e9), RespBytes: int(s.Bytes)}
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("%s: interval %d: %v", name, i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// EventsToRecords turns a client's events into records on the cell's
// clock: times in ms from start (when the client command started), events
// sent before start+warmup marked warm-up, in Seq order. An event that
// does not fit the cell (sent before it started, answered after it ended
// by more than slack) is an error: its clock or its file is not this
// cell's.
func EventsToRecords(evs []Event, start, end time.Time, warmup, slack time.Duration) ([]results.Record, error) {
	if len(evs) == 0 {
		return nil, errors.New("the client reported no event")
	}
	lo, hi := start.Add(-slack).UnixNano(), end.Add(slack).UnixNano()
	warmEnd := start.Add(warmup).UnixNano()
	ms := func(ns int64) float64 { return float64(ns-start.UnixNano()) / 1e6 }
	out := make([]results.Record, 0, len(evs))
	for _, e := range evs {
		switch {
		case e.SentNs < lo:
			return nil, fmt.Errorf("event %d was sent %.1f ms before the cell's client started: not this cell's clock", e.Seq, -ms(e.SentNs))
		case e.SentNs > hi || e.DoneNs > hi:
			return nil, fmt.Errorf("event %d is %.1f ms after the cell's client ended: not this cell's clock", e.Seq, ms(max(e.SentNs, e.DoneNs))-ms(end.UnixNano()))
		}
		r := results.Record{Seq: e.Seq, Warmup: e.SentNs < warmEnd, ScheduledMs: ms(e.SentNs), SentMs: ms(e.SentNs), ReqBytes: e.ReqBytes, RespBytes: e.RespBytes, ConnID: 1, Error: e.Error}
		if e.Error == "" && e.DoneNs == 0 {
			r.Error = "no answer"
		}
		if r.Error == "" {
			r.DoneMs, r.FirstByteMs = ms(e.DoneNs), ms(e.DoneNs)
			r.DelayMs = r.DoneMs - r.SentMs
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b results.Record) int { return a.Seq - b.Seq })
	return out, nil
}
