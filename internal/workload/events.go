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
	"tlab/internal/untrusted"
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
	// Read as a stream, never whole: memory follows the events kept (at
	// most MaxEvents), not the file's size, and reading stops at the cap.
	r = untrusted.Reader(r, name, maxEventsFile)
	var evs []Event
	var err error
	switch format {
	case EventsJSONL, "":
		evs, err = parseJSONLEvents(name, r, MaxEvents)
	case EventsCSV:
		evs, err = parseCSVEvents(name, r, MaxEvents)
	case EventsIrtt:
		evs, err = parseIrttEvents(name, r, MaxEvents)
	case EventsIperf3:
		evs, err = parseIperf3Events(name, r, MaxEvents)
	default:
		return nil, fmt.Errorf("events format %q: want one of %s", format, strings.Join(EventFormats(), ", "))
	}
	if err != nil {
		return nil, err
	}
	return evs, nil
}

// errTooManyEvents is said as soon as the one event too many is read.
var errTooManyEvents = errors.New("more events than a cell may hold")

func tooMany(name string, limit int) error {
	return fmt.Errorf("%s: %w (%d)", name, errTooManyEvents, limit)
}

func parseJSONLEvents(name string, r io.Reader, limit int) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
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
		if len(out) == limit {
			return nil, tooMany(name, limit)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		var tl *untrusted.TooLargeError
		if errors.As(err, &tl) {
			return nil, err
		}
		return nil, fmt.Errorf("%s:%d: %v", name, line+1, err)
	}
	return out, nil
}

func parseCSVEvents(name string, r io.Reader, limit int) ([]Event, error) {
	cr := csv.NewReader(r)
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
		if len(out) == limit {
			return nil, tooMany(name, limit)
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

// irttRoundTrip is what is read of one of irtt's round trips: its
// sequence number, whether it was lost, and its wall-clock times.
type irttRoundTrip struct {
	Seq        int    `json:"seqno"`
	Lost       string `json:"lost"`
	Timestamps struct {
		Client struct {
			Send    struct{ Wall int64 } `json:"send"`
			Receive struct{ Wall int64 } `json:"receive"`
		} `json:"client"`
	} `json:"timestamps"`
}

// parseIrttEvents reads irtt's JSON (irtt client -o FILE.json) as a
// stream: the round trips are decoded one at a time and kept as events,
// every other member skipped, so that memory follows the events kept.
// The packet length (config.length) may come before or after them.
func parseIrttEvents(name string, r io.Reader, limit int) ([]Event, error) {
	var length int
	var trips []irttRoundTrip
	bad := func(err error) error {
		return fmt.Errorf("%s: not irtt's JSON (irtt client -o FILE.json): %v", name, err)
	}
	err := walkObject(json.NewDecoder(r), map[string]func(*json.Decoder) error{
		"config": func(dec *json.Decoder) error {
			var c struct {
				Length int `json:"length"`
			}
			err := dec.Decode(&c)
			length = c.Length
			return err
		},
		"round_trips": func(dec *json.Decoder) error {
			return walkArray(dec, func(dec *json.Decoder) error {
				if len(trips) == limit {
					return tooMany(name, limit)
				}
				var rt irttRoundTrip
				if err := dec.Decode(&rt); err != nil {
					return err
				}
				trips = append(trips, rt)
				return nil
			})
		},
	})
	if err != nil {
		if isOwnError(err) {
			return nil, err
		}
		return nil, bad(err)
	}
	out := make([]Event, 0, len(trips))
	for i, rt := range trips {
		e := Event{Seq: rt.Seq, SentNs: rt.Timestamps.Client.Send.Wall, ReqBytes: length}
		switch rt.Lost {
		case "false", "":
			e.DoneNs, e.RespBytes = rt.Timestamps.Client.Receive.Wall, length
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

// iperf3Interval is what is read of one of iperf3's intervals: its span
// in seconds from the test's start, and its bytes.
type iperf3Interval struct {
	Sum struct {
		Start float64 `json:"start"`
		End   float64 `json:"end"`
		Bytes float64 `json:"bytes"`
	} `json:"sum"`
}

// parseIperf3Events reads iperf3 -J's output as a stream, as
// parseIrttEvents does: the intervals one at a time, the test's start
// and error wherever they come, everything else skipped.
func parseIperf3Events(name string, r io.Reader, limit int) ([]Event, error) {
	var startSecs int64
	var ivs []iperf3Interval
	var iperfErr string
	err := walkObject(json.NewDecoder(r), map[string]func(*json.Decoder) error{
		"start": func(dec *json.Decoder) error {
			var st struct {
				Timestamp struct {
					Timesecs int64 `json:"timesecs"`
				} `json:"timestamp"`
			}
			err := dec.Decode(&st)
			startSecs = st.Timestamp.Timesecs
			return err
		},
		"intervals": func(dec *json.Decoder) error {
			return walkArray(dec, func(dec *json.Decoder) error {
				if len(ivs) == limit {
					return tooMany(name, limit)
				}
				var iv iperf3Interval
				if err := dec.Decode(&iv); err != nil {
					return err
				}
				ivs = append(ivs, iv)
				return nil
			})
		},
		"error": func(dec *json.Decoder) error { return dec.Decode(&iperfErr) },
	})
	if err != nil {
		if isOwnError(err) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: not iperf3's JSON (iperf3 -J): %v", name, err)
	}
	if iperfErr != "" {
		return nil, fmt.Errorf("%s: iperf3: %s", name, iperfErr)
	}
	base := time.Unix(startSecs, 0).UnixNano()
	out := make([]Event, 0, len(ivs))
	for i, iv := range ivs {
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

// isOwnError tells an error to return as it is (too many events, a file
// over its cap) from one to say as "not irtt's JSON".
func isOwnError(err error) bool {
	var tl *untrusted.TooLargeError
	return errors.Is(err, errTooManyEvents) || errors.As(err, &tl)
}

// walkObject reads one JSON object from dec, handing each member named in
// members to its function (which decodes the value) and skipping the
// others token by token, so that nothing of theirs is kept. A member
// given twice is an error: which one counts would be a guess.
func walkObject(dec *json.Decoder, members map[string]func(*json.Decoder) error) error {
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		fn, ok := members[key]
		if !ok {
			if err := skipValue(dec); err != nil {
				return err
			}
			continue
		}
		if seen[key] {
			return fmt.Errorf("%q given twice", key)
		}
		seen[key] = true
		if err := fn(dec); err != nil {
			return err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more after the object")
	}
	return nil
}

// walkArray reads one JSON array (or null) from dec, handing each element
// to fn to decode.
func walkArray(dec *json.Decoder, fn func(*json.Decoder) error) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil // null: no elements
	}
	if t != json.Delim('[') {
		return fmt.Errorf("want an array, found %v", t)
	}
	for dec.More() {
		if err := fn(dec); err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing ]
	return err
}

// expectDelim reads the delimiter want from dec.
func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("want %v, found %v", want, t)
	}
	return nil
}

// skipValue reads one JSON value from dec and drops it, nesting counted
// rather than the value kept.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
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
