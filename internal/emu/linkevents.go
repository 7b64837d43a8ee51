package emu

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// LinkEventsFile is the cell's record of its links' changes: one row a
// change, with its time on the link's clock and in the measured window.
const LinkEventsFile = "link-events.csv"

// Sources of a link event.
const (
	// EventStart is a direction's own settings when the link starts.
	EventStart = "start"
	// EventStep is a timeline's step; EventRepeat a repeating timeline's
	// return to the direction's own settings at the start of a period.
	EventStep   = "step"
	EventRepeat = "repeat"
	// EventLive is a change made while the link ran (tlab link set).
	EventLive = "live"
	// EventHandover is a multi-homed host's handover taking a link down
	// (loss 100 %) or bringing it up with the host's route (testbed).
	EventHandover = "handover"
)

// LinkEvent is one change of a link direction's settings: at At on the
// link's clock the settings start to move (over Ramp) to State.
type LinkEvent struct {
	Link      string
	Direction string // "up" or "down"
	Source    string
	At        time.Duration
	Ramp      time.Duration
	State     TimelineState
	// UnixNs is the same instant by the host's wall clock (nanoseconds
	// since the UNIX epoch; 0 when not known), the clock records'
	// sent_unix_ns is on, so that messages line up with the link's state.
	UnixNs int64
}

// MaxLinkEvents bounds the events listed for one cell: a timeline
// repeating every 100 ms with ten steps lists 6 000 a minute.
const MaxLinkEvents = 1_000_000

// stateAtOffset is the state at off into a period, without wrapping: the
// end of a ramp that ends with its period.
func (s *Schedule) stateAtOffset(off int64) TimelineState {
	v := func(f int) float64 { return s.tracks[f].value(off) }
	return TimelineState{
		Delay: time.Duration(math.Round(v(fieldDelay))), Jitter: time.Duration(math.Round(v(fieldJitter))),
		Loss: v(fieldLoss), RateBps: v(fieldRate),
		QueuePackets: int(math.Round(v(fieldQueuePackets))), QueueBytes: int64(math.Round(v(fieldQueueBytes))),
	}
}

// TimelineEvents lists a direction's changes from the link's start until
// until: its own settings at 0, then each step with the settings it leads
// to, each period of a repeating timeline again. A direction without a
// timeline has none.
func (d DirectionConfig) TimelineEvents(link, direction string, until time.Duration) []LinkEvent {
	s := NewSchedule(d)
	if s == nil {
		return nil
	}
	ev := func(source string, at, ramp int64, st TimelineState) LinkEvent {
		return LinkEvent{Link: link, Direction: direction, Source: source, At: time.Duration(at), Ramp: time.Duration(ramp), State: st}
	}
	out := []LinkEvent{ev(EventStart, 0, 0, s.stateAtOffset(-1))}
	end := until.Nanoseconds()
	for base := int64(0); base <= end && len(out) < MaxLinkEvents; base += s.period {
		if base > 0 {
			out = append(out, ev(EventRepeat, base, 0, s.stateAtOffset(-1)))
		}
		for _, st := range d.Timeline.Steps {
			at := base + st.At.D().Nanoseconds()
			if at > end || len(out) >= MaxLinkEvents {
				break
			}
			off := st.At.D().Nanoseconds() + st.Ramp.D().Nanoseconds()
			out = append(out, ev(EventStep, at, st.Ramp.D().Nanoseconds(), s.stateAtOffset(off)))
		}
		if s.period == 0 {
			break
		}
	}
	return out
}

// linkEventColumns is the file's header.
var linkEventColumns = []string{"link", "direction", "source", "link_ms", "window_ms", "ramp_ms",
	"delay_ms", "jitter_ms", "loss_pct", "rate_mbit", "queue_packets", "queue_bytes"}

// linkEventUnixColumn is the events' wall-clock time (UnixNs), written
// after linkEventColumns; files an older tlab wrote lack it.
const linkEventUnixColumn = "unix_ns"

// WriteLinkEvents writes events as CSV. windowStart is the link clock
// when the cell's measured window started: window_ms is the event's time
// from then (negative before it).
func WriteLinkEvents(w io.Writer, events []LinkEvent, windowStart time.Duration) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(append(slices.Clone(linkEventColumns), linkEventUnixColumn)); err != nil {
		return err
	}
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', -1, 64) }
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, e := range events {
		st := e.State
		row := []string{e.Link, e.Direction, e.Source, ms(e.At), ms(e.At - windowStart), ms(e.Ramp),
			ms(st.Delay), ms(st.Jitter), num(st.Loss * 100), num(st.RateBps / 1e6), strconv.Itoa(st.QueuePackets), strconv.FormatInt(st.QueueBytes, 10), ""}
		if e.UnixNs != 0 {
			row[len(row)-1] = strconv.FormatInt(e.UnixNs, 10)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// MaxLinkEventsFile bounds what is read of a link-events file (one may
// come with a run received from elsewhere): a row is under 100 bytes.
const MaxLinkEventsFile = 128 << 20

// ReadLinkEvents reads a link-events file by its columns' names, each
// event with its time in the window (WindowAt). Errors name the file and
// the line.
func ReadLinkEvents(name string, r io.Reader) ([]LinkEvent, []time.Duration, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, c := range linkEventColumns {
		if _, ok := col[c]; !ok {
			return nil, nil, fmt.Errorf("%s:1: no column %s", name, c)
		}
	}
	var events []LinkEvent
	var window []time.Duration
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return events, window, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		var bad error
		f := func(c string) float64 {
			v, err := strconv.ParseFloat(row[col[c]], 64)
			if (err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e15) && bad == nil {
				bad = fmt.Errorf("%s:%d: %s %q is not a number", name, line, c, row[col[c]])
			}
			return v
		}
		msDur := func(c string) time.Duration { return time.Duration(f(c) * 1e6) }
		e := LinkEvent{Link: row[col["link"]], Direction: row[col["direction"]], Source: row[col["source"]],
			At: msDur("link_ms"), Ramp: msDur("ramp_ms"),
			State: TimelineState{Delay: msDur("delay_ms"), Jitter: msDur("jitter_ms"), Loss: f("loss_pct") / 100, RateBps: f("rate_mbit") * 1e6,
				QueuePackets: int(f("queue_packets")), QueueBytes: int64(f("queue_bytes"))}}
		w := msDur("window_ms")
		if c, ok := col[linkEventUnixColumn]; ok && row[c] != "" {
			v, err := strconv.ParseInt(row[c], 10, 64)
			if (err != nil || v <= 0) && bad == nil {
				bad = fmt.Errorf("%s:%d: %s %q is not a positive integer", name, line, linkEventUnixColumn, row[c])
			}
			e.UnixNs = v
		}
		if bad != nil {
			return nil, nil, bad
		}
		if len(events) == MaxLinkEvents {
			return nil, nil, fmt.Errorf("%s:%d: more than %d events", name, line, MaxLinkEvents)
		}
		events = append(events, e)
		window = append(window, w)
	}
}
