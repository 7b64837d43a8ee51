package proto

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io"
	"sync"
	"time"
)

// FrameTransport carries camera frames from a client to a server and a
// small result back for each (study E's offload). Frames are sent open
// loop: Send does not wait for earlier results.
//
// So that one-way delays are exact without changing any wire format, both
// ends report each datagram they send or receive by a hash of its bytes and
// a time on the process's clock (client and server run in one process); a
// stream transport reports each frame as one unit.
type FrameTransport interface {
	// ServeFrames receives frames in host n on port and calls onFrame for
	// each frame once it is whole, or once the reassembly timeout gave up
	// on it (Complete false); when onFrame returns a size above 0 for a
	// whole frame, a result of that size goes back to the client.
	ServeFrames(n Net, port int, s Settings, o FrameOptions, onFrame func(FrameArrival) int) (io.Closer, error)
	// DialFrames makes a client in host n for the server at addr.
	DialFrames(ctx context.Context, n Net, addr string, s Settings, o FrameOptions) (FrameClient, error)
}

// FrameOptions are what a frame transport needs to know of the stream.
type FrameOptions struct {
	// FPS sets RTP and MPEG-TS timestamps (90 kHz per frame interval).
	FPS float64
	// ReassemblyTimeout is how long a datagram transport's server waits
	// for a frame's missing fragments before it counts the frame lost.
	ReassemblyTimeout time.Duration
}

// FrameClient sends frames and hears their results.
type FrameClient interface {
	// Send sends frame id now and returns what went on the wire: each
	// datagram (or, for a stream, the frame) with its hash and send time.
	Send(id uint32, payload []byte) ([]Packet, error)
	// Results delivers each result as it arrives; it is closed by Close.
	Results() <-chan FrameResult
	Close() error
}

// Packet is one datagram (or a stream's whole frame) as sent or received.
type Packet struct {
	Hash uint64
	At   time.Time
	Size int
}

// FrameArrival is what the server saw of one frame.
type FrameArrival struct {
	ID       uint32
	Complete bool
	Bytes    int
	First    time.Time
	Last     time.Time
	// Packets are the frame's datagrams as they arrived (one entry for a
	// stream transport, its hash matching the sender's).
	Packets []Packet
}

// FrameResult is a result back at the client.
type FrameResult struct {
	ID uint32
	At time.Time
}

// ErrFramesOnly is returned by the request/response methods of a protocol
// that only carries frames (udp, rtp, mpegts, quic-dgram).
var ErrFramesOnly = errors.New("this protocol only carries frames (workload frames)")

// framesOnly is embedded by the protocols that only carry frames.
type framesOnly struct{}

func (framesOnly) Serve(Net, int, Settings) (io.Closer, error) { return nil, ErrFramesOnly }
func (framesOnly) NewClient(context.Context, Net, string, Settings) (Client, error) {
	return nil, ErrFramesOnly
}

// FramesOnly tells whether the named protocol only carries frames.
func FramesOnly(name string) bool {
	f, ok := constructors[name]
	if !ok {
		return false
	}
	_, only := f().(interface{ framesOnlyMarker() })
	return only
}

func (framesOnly) framesOnlyMarker() {}

// HashBytes is the hash frame transports report datagrams by.
func HashBytes(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// Fragments: a frame split into datagrams under the path MTU, each with a
// small header: magic, frame id, fragment index and count. Results travel
// back with the same header, index 0 of 1 and magic 'R'.
const (
	fragHeader   = 12
	fragMagic    = 'F'
	resultMagic  = 'R'
	udpMaxChunk  = 1472 - fragHeader // 1500-byte MTU less IP and UDP headers
	quicMaxChunk = 1100              // within quic-go's datagram frame limit at that MTU
)

func putFragHeader(b []byte, magic byte, id uint32, idx, count int) {
	b[0], b[1] = 'T', magic
	binary.BigEndian.PutUint32(b[2:6], id)
	binary.BigEndian.PutUint16(b[6:8], uint16(idx))
	binary.BigEndian.PutUint16(b[8:10], uint16(count))
	b[10], b[11] = 0, 0
}

func parseFragHeader(b []byte) (magic byte, id uint32, idx, count int, ok bool) {
	if len(b) < fragHeader || b[0] != 'T' {
		return 0, 0, 0, 0, false
	}
	return b[1], binary.BigEndian.Uint32(b[2:6]), int(binary.BigEndian.Uint16(b[6:8])), int(binary.BigEndian.Uint16(b[8:10])), true
}

// fragment splits a frame into datagrams of at most chunk payload bytes.
func fragment(id uint32, payload []byte, chunk int) [][]byte {
	count := max(1, (len(payload)+chunk-1)/chunk)
	out := make([][]byte, count)
	for i := range count {
		part := payload[min(i*chunk, len(payload)):min((i+1)*chunk, len(payload))]
		d := make([]byte, fragHeader+len(part))
		putFragHeader(d, fragMagic, id, i, count)
		copy(d[fragHeader:], part)
		out[i] = d
	}
	return out
}

// result makes a result datagram of size bytes (at least the header).
func resultDatagram(id uint32, size int) []byte {
	d := make([]byte, max(size, fragHeader))
	putFragHeader(d, resultMagic, id, 0, 1)
	return d
}

// reassembler collects fragments into frames and gives up on a frame
// whose fragments have not all arrived within the timeout.
type reassembler struct {
	mu      sync.Mutex
	timeout time.Duration
	partial map[uint32]*partialFrame
	done    map[uint32]bool
	deliver func(FrameArrival)
	stop    chan struct{}
	wg      sync.WaitGroup
}

type partialFrame struct {
	arrival FrameArrival
	got     map[int]bool
}

func newReassembler(timeout time.Duration, deliver func(FrameArrival)) *reassembler {
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}
	r := &reassembler{timeout: timeout, partial: map[uint32]*partialFrame{}, done: map[uint32]bool{}, deliver: deliver, stop: make(chan struct{})}
	r.wg.Add(1)
	go r.expire()
	return r
}

// add records one piece of frame id (key tells duplicates apart); the
// frame is delivered as soon as whole says, given its pieces and payload
// bytes so far, that it is complete.
func (r *reassembler) add(id uint32, key, size int, p Packet, whole func(pieces, bytes int) bool) {
	r.mu.Lock()
	if r.done[id] {
		r.mu.Unlock()
		return
	}
	pf := r.partial[id]
	if pf == nil {
		pf = &partialFrame{arrival: FrameArrival{ID: id, First: p.At}, got: map[int]bool{}}
		r.partial[id] = pf
	}
	if pf.got[key] {
		r.mu.Unlock()
		return
	}
	pf.got[key] = true
	pf.arrival.Bytes += size
	pf.arrival.Last = p.At
	pf.arrival.Packets = append(pf.arrival.Packets, p)
	var complete *FrameArrival
	if whole(len(pf.got), pf.arrival.Bytes) {
		pf.arrival.Complete = true
		complete = &pf.arrival
		delete(r.partial, id)
		r.done[id] = true
	}
	r.mu.Unlock()
	if complete != nil {
		r.deliver(*complete)
	}
}

// expire gives up on frames older than the timeout.
func (r *reassembler) expire() {
	defer r.wg.Done()
	t := time.NewTicker(r.timeout / 4)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			var lost []FrameArrival
			r.mu.Lock()
			for id, pf := range r.partial {
				if now.Sub(pf.arrival.First) > r.timeout {
					lost = append(lost, pf.arrival)
					delete(r.partial, id)
					r.done[id] = true
				}
			}
			r.mu.Unlock()
			for _, a := range lost {
				r.deliver(a)
			}
		}
	}
}

func (r *reassembler) close() {
	close(r.stop)
	r.wg.Wait()
}
