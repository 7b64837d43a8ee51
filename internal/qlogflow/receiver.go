package qlogflow

import "time"

// Point is the receiver's state after one logged packet.
type Point struct {
	T time.Duration
	// Received is each stream's in-order bytes, in the order of
	// Receiver.Streams.
	Received []int64
	// MaxStreamWindow is the largest stream window and ConnWindow the
	// connection window, both estimated (see Receiver).
	MaxStreamWindow int64
	ConnWindow      int64
	// StreamWindowSum is the streams' windows summed (study C's Figs.
	// 7b-9b), estimated as MaxStreamWindow is.
	StreamWindowSum int64
}

// Receiver is the flow-control view of the endpoint that logged the trace,
// as the receiver of stream data.
//
// A MAX_STREAM_DATA or MAX_DATA frame carries a limit, not a window: the
// window is the limit less what the application has read. The trace does
// not log reads, so the window is estimated as the limit less the in-order
// bytes received when the frame left. With an application that reads at
// once the two differ by the data still queued for it, so the estimate is
// a slight lower bound.
type Receiver struct {
	// Streams lists the stream IDs that carried data, in the order their
	// first data arrived.
	Streams []int64
	Points  []Point
	// StreamUpdates and ConnUpdates count the MAX_STREAM_DATA and MAX_DATA
	// frames sent; Blocked the STREAM_DATA_BLOCKED and DATA_BLOCKED frames
	// received (each says the peer hit a limit).
	StreamUpdates, ConnUpdates, Blocked int
	// FirstData and LastData are when the first and last stream bytes
	// arrived.
	FirstData, LastData time.Duration
}

// inOrder tracks the contiguous prefix of one stream's received bytes.
type inOrder struct {
	delivered int64
	pending   map[int64]int64 // out-of-order ranges: start -> end
}

func (s *inOrder) add(off, end int64) {
	if end <= s.delivered {
		return
	}
	if off > s.delivered {
		s.pending[off] = max(s.pending[off], end)
		return
	}
	s.delivered = end
	for merged := true; merged; {
		merged = false
		for o, e := range s.pending {
			if o <= s.delivered {
				s.delivered = max(s.delivered, e)
				delete(s.pending, o)
				merged = true
			}
		}
	}
}

// Receiver replays the trace's packets from the receiving side.
func (t *Trace) Receiver() Receiver {
	var r Receiver
	index := map[int64]int{}
	var streams []*inOrder
	var windows []int64
	connWindow := t.InitialMaxData
	// A stream this endpoint opened gets its bidi_local window, one its
	// peer opened bidi_remote; bit 0 of the ID is 1 for server-initiated.
	initial := func(id int64) int64 {
		if (id&1 == 1) == (t.VantagePoint == "server") {
			return t.InitialMaxStreamDataBidiLocal
		}
		return t.InitialMaxStreamDataBidiRemote
	}
	stream := func(id int64) int {
		i, ok := index[id]
		if !ok {
			i = len(streams)
			index[id] = i
			r.Streams = append(r.Streams, id)
			streams = append(streams, &inOrder{pending: map[int64]int64{}})
			windows = append(windows, initial(id))
		}
		return i
	}
	var total int64
	for _, p := range t.Packets {
		changed := false
		for _, f := range p.Frames {
			switch {
			case !p.Sent && f.Type == "stream" && f.Length > 0:
				s := streams[stream(f.StreamID)]
				before := s.delivered
				s.add(f.Offset, f.Offset+f.Length)
				total += s.delivered - before
				if r.FirstData == 0 {
					r.FirstData = p.T
				}
				r.LastData = p.T
				changed = true
			case p.Sent && f.Type == "max_stream_data":
				i := stream(f.StreamID)
				windows[i] = f.Maximum - streams[i].delivered
				r.StreamUpdates++
				changed = true
			case p.Sent && f.Type == "max_data":
				connWindow = f.Maximum - total
				r.ConnUpdates++
				changed = true
			case !p.Sent && (f.Type == "stream_data_blocked" || f.Type == "data_blocked"):
				r.Blocked++
			}
		}
		if !changed {
			continue
		}
		pt := Point{T: p.T, Received: make([]int64, len(streams)), ConnWindow: connWindow}
		for i, s := range streams {
			pt.Received[i] = s.delivered
			pt.MaxStreamWindow = max(pt.MaxStreamWindow, windows[i])
			pt.StreamWindowSum += windows[i]
		}
		r.Points = append(r.Points, pt)
	}
	return r
}
