package remote

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"tlab/internal/proto"
)

// maxArrivalPackets bounds the packets a frame server keeps for its
// controller (about 50 MB): a minute of study E's largest frames at 30 Hz
// is some 200 000.
const maxArrivalPackets = 1 << 20

// pageBudget is how many bytes of encoded arrivals a page may hold: the
// control message's limit less room for the response's own fields.
const pageBudget = MaxFrame - 4096

// frameServer keeps what a frame server on the agent saw until the
// controller fetches it: it is the server's FrameSink.
type frameServer struct {
	srv      io.Closer
	opts     proto.FrameOptions
	mu       sync.Mutex
	arrivals []WireArrival
	packets  int
	dropped  int
}

// newFrameServer checks a frame server's arguments from the controller:
// the agent holds the bounds itself, whatever the controller checked.
func newFrameServer(fa *FrameServeArgs) (*frameServer, error) {
	if fa.ResultSize < 0 || fa.ResultSize > proto.MaxResultSize || !(fa.ProcessingMs >= 0 && fa.ProcessingMs <= 10000) || !(fa.ReassemblyMs >= 0 && fa.ReassemblyMs <= float64(proto.MaxReassemblyTimeout/time.Millisecond)) {
		return nil, fmt.Errorf("frames: result size %d B, reassembly %g ms, processing %g ms: want 0 to %d B, 0 to %v and 0 to 10 s",
			fa.ResultSize, fa.ReassemblyMs, fa.ProcessingMs, proto.MaxResultSize, proto.MaxReassemblyTimeout)
	}
	opts := proto.FrameOptions{FPS: fa.FPS, ReassemblyTimeout: time.Duration(fa.ReassemblyMs * 1e6)}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &frameServer{opts: opts}, nil
}

// ClockUncertainty is nothing to keep: the controller knows the
// agent's clock's offset and its uncertainty.
func (fs *frameServer) ClockUncertainty(float64) {}

// Frame keeps a frame as it was seen, up to maxArrivalPackets packets
// in all (the frames beyond are counted as dropped).
func (fs *frameServer) Frame(a proto.FrameArrival) {
	w := WireArrival{ID: a.ID, Complete: a.Complete, Bytes: a.Bytes, FirstNs: a.First.UnixNano(), LastNs: a.Last.UnixNano()}
	for _, p := range a.Packets {
		w.Packets = append(w.Packets, [3]uint64{p.Hash, uint64(p.At.UnixNano()), uint64(p.Size)})
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.packets+len(w.Packets) > maxArrivalPackets {
		fs.dropped++
		return
	}
	fs.arrivals = append(fs.arrivals, w)
	fs.packets += len(w.Packets)
}

// Arrived keeps frames told all at once (a server in this process tells
// them one by one, Frame).
func (fs *frameServer) Arrived(all []proto.FrameArrival) {
	for _, a := range all {
		fs.Frame(a)
	}
}

func (fs *frameServer) Close() error { return fs.srv.Close() }

// page returns the arrivals from index from on, as many as fit one
// control message: bounded by their encoded size, not by a count (a
// stream's frames are one packet each, and their own fields made a page
// of 700 packets 113 KB). An arrival that cannot fit a page alone is an
// error that names it, never a message the channel refuses.
func (fs *frameServer) page(from int) (ArrivalsPage, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	p := ArrivalsPage{Next: from, Dropped: fs.dropped}
	size := 0
	for p.Next < len(fs.arrivals) {
		a := fs.arrivals[p.Next]
		b, err := json.Marshal(a)
		if err != nil {
			return p, err
		}
		if len(b) > pageBudget {
			return p, fmt.Errorf("frame %d has %d packets: more than one control message can report (%d bytes)", a.ID, len(a.Packets), pageBudget)
		}
		if size+len(b)+1 > pageBudget {
			break
		}
		p.Arrivals = append(p.Arrivals, a)
		size += len(b) + 1 // and its comma
		p.Next++
	}
	p.Done = p.Next >= len(fs.arrivals)
	return p, nil
}

// Arrivals fetches every arrival of the agent's frame server id, page by
// page, with times on this machine's clock: the agent's less offsetNs.
func (c *Client) Arrivals(id int, offsetNs int64) ([]proto.FrameArrival, error) {
	var out []proto.FrameArrival
	for from := 0; ; {
		var p ArrivalsPage
		if err := c.Call(OpArrivals, ArrivalsArgs{ID: id, From: from}, &p); err != nil {
			return out, err
		}
		for _, w := range p.Arrivals {
			a := proto.FrameArrival{ID: w.ID, Complete: w.Complete, Bytes: w.Bytes, First: time.Unix(0, w.FirstNs-offsetNs), Last: time.Unix(0, w.LastNs-offsetNs)}
			for _, pk := range w.Packets {
				a.Packets = append(a.Packets, proto.Packet{Hash: pk[0], At: time.Unix(0, int64(pk[1])-offsetNs), Size: int(pk[2])})
			}
			out = append(out, a)
		}
		if p.Dropped > 0 {
			return out, fmt.Errorf("the agent's frame server kept at most %d packets: %d frames were not kept", maxArrivalPackets, p.Dropped)
		}
		if p.Done || p.Next <= from {
			return out, nil
		}
		from = p.Next
	}
}
