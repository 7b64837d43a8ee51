// Package qlogflow reads the flow-control story of a QUIC connection from a
// qlog file (JSON-SEQ, as quic-go writes it): the stream data a receiver
// got, the MAX_STREAM_DATA and MAX_DATA limits it advertised, and the
// STREAM_DATA_BLOCKED and DATA_BLOCKED signals of its peer. It knows
// nothing of tlab's workloads; any qlog from quic-go (or another stack
// that writes the same events) can be read.
package qlogflow

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"
)

// Frame is one frame of a logged packet, with the fields flow control
// needs.
type Frame struct {
	Type     string `json:"frame_type"`
	StreamID int64  `json:"stream_id"`
	Offset   int64  `json:"offset"`
	Length   int64  `json:"length"`
	Fin      bool   `json:"fin"`
	// Maximum is the limit of MAX_DATA and MAX_STREAM_DATA; Limit that of
	// DATA_BLOCKED and STREAM_DATA_BLOCKED.
	Maximum int64 `json:"maximum"`
	Limit   int64 `json:"limit"`
}

// Packet is a packet the vantage point sent or received.
type Packet struct {
	// T is the time since the trace's reference time.
	T      time.Duration
	Sent   bool
	Frames []Frame
}

// Trace is what qlogflow keeps of one qlog file.
type Trace struct {
	// VantagePoint is "client" or "server".
	VantagePoint string
	// Reference is the wall-clock time the event times count from.
	Reference time.Time
	Packets   []Packet
	// Local transport parameters, when logged: the initial receive
	// windows this endpoint advertised.
	InitialMaxData                 int64
	InitialMaxStreamDataBidiLocal  int64
	InitialMaxStreamDataBidiRemote int64
}

// ReadFile reads a qlog file.
func ReadFile(path string) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

type header struct {
	Trace struct {
		VantagePoint struct {
			Type string `json:"type"`
		} `json:"vantage_point"`
		CommonFields struct {
			ReferenceTime struct {
				WallClock string `json:"wall_clock_time"`
			} `json:"reference_time"`
		} `json:"common_fields"`
	} `json:"trace"`
}

type record struct {
	Time float64         `json:"time"`
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
}

type packetData struct {
	Frames []Frame `json:"frames"`
}

type parametersData struct {
	Owner                          string `json:"owner"`
	InitialMaxData                 int64  `json:"initial_max_data"`
	InitialMaxStreamDataBidiLocal  int64  `json:"initial_max_stream_data_bidi_local"`
	InitialMaxStreamDataBidiRemote int64  `json:"initial_max_stream_data_bidi_remote"`
}

// Read parses a JSON-SEQ qlog stream: records separated by the ASCII
// record separator, the first one the trace's header. A truncated last
// record (a file still being written) is an error.
func Read(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	sc.Split(splitRecords)
	t := &Trace{}
	n := 0
	for sc.Scan() {
		rec := bytes.TrimSpace(sc.Bytes())
		if len(rec) == 0 {
			continue
		}
		n++
		if n == 1 {
			var h header
			if err := json.Unmarshal(rec, &h); err != nil {
				return nil, fmt.Errorf("record 1 (header): %w", err)
			}
			t.VantagePoint = h.Trace.VantagePoint.Type
			if wc := h.Trace.CommonFields.ReferenceTime.WallClock; wc != "" {
				ref, err := time.Parse(time.RFC3339Nano, wc)
				if err != nil {
					return nil, fmt.Errorf("record 1 (header): reference time: %w", err)
				}
				t.Reference = ref
			}
			continue
		}
		var ev record
		if err := json.Unmarshal(rec, &ev); err != nil {
			return nil, fmt.Errorf("record %d: %w", n, err)
		}
		at := time.Duration(ev.Time * float64(time.Millisecond))
		switch ev.Name {
		case "transport:packet_sent", "transport:packet_received":
			var p packetData
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				return nil, fmt.Errorf("record %d (%s): %w", n, ev.Name, err)
			}
			t.Packets = append(t.Packets, Packet{T: at, Sent: ev.Name == "transport:packet_sent", Frames: p.Frames})
		case "transport:parameters_set":
			var p parametersData
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				return nil, fmt.Errorf("record %d (%s): %w", n, ev.Name, err)
			}
			if p.Owner == "local" {
				t.InitialMaxData, t.InitialMaxStreamDataBidiLocal, t.InitialMaxStreamDataBidiRemote = p.InitialMaxData, p.InitialMaxStreamDataBidiLocal, p.InitialMaxStreamDataBidiRemote
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errors.New("empty qlog")
	}
	sort.SliceStable(t.Packets, func(i, j int) bool { return t.Packets[i].T < t.Packets[j].T })
	return t, nil
}

// splitRecords splits a JSON-SEQ stream at record separators (0x1e).
func splitRecords(data []byte, atEOF bool) (int, []byte, error) {
	start := 0
	for start < len(data) && data[start] == 0x1e {
		start++
	}
	if i := bytes.IndexByte(data[start:], 0x1e); i >= 0 {
		return start + i, data[start : start+i], nil
	}
	if atEOF {
		if start == len(data) {
			return len(data), nil, nil
		}
		return len(data), data[start:], nil
	}
	return start, nil, nil
}
