package frames

import (
	"encoding/binary"
	"sync"
	"time"
	"tlab/internal/proto"
)

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

// The reassembler's bounds, whatever arrives: the pieces it holds in
// incomplete frames (a sender that starts frames and never finishes them
// makes the oldest be given up early, as lost, instead of growing the
// server), and the finished frames it remembers so that a late piece is
// not taken for a new frame.
const (
	maxHeldPieces  = 1 << 16
	maxDoneFrames  = 1 << 16
	minExpiryEvery = time.Millisecond
)

// reassembler collects fragments into frames and gives up on a frame
// whose fragments have not all arrived within the timeout.
type reassembler struct {
	mu      sync.Mutex
	timeout time.Duration
	partial map[uint32]*partialFrame
	// order holds the partial frames' ids as their first pieces came:
	// the oldest is given up first.
	order []uint32
	held  int // pieces in partial frames
	done  map[uint32]bool
	// doneOrder is a ring of the last maxDoneFrames finished ids.
	doneOrder []uint32
	doneNext  int
	deliver   func(proto.FrameArrival)
	stop      chan struct{}
	wg        sync.WaitGroup
}

type partialFrame struct {
	arrival proto.FrameArrival
	got     map[int]bool
}

func newReassembler(timeout time.Duration, deliver func(proto.FrameArrival)) *reassembler {
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}
	return newReassemblerEvery(timeout, max(timeout/4, minExpiryEvery), deliver)
}

// newReassemblerEvery looks for frames to give up every tick (a test
// drives expireAt itself and gives a tick that never comes).
func newReassemblerEvery(timeout, tick time.Duration, deliver func(proto.FrameArrival)) *reassembler {
	r := &reassembler{timeout: timeout, partial: map[uint32]*partialFrame{}, done: map[uint32]bool{}, deliver: deliver, stop: make(chan struct{})}
	r.wg.Add(1)
	go r.expire(tick)
	return r
}

// add records one piece of frame id (key tells duplicates apart); the
// frame is delivered as soon as whole says, given its pieces and payload
// bytes so far, that it is complete.
func (r *reassembler) add(id uint32, key, size int, p proto.Packet, whole func(pieces, bytes int) bool) {
	r.mu.Lock()
	if r.done[id] {
		r.mu.Unlock()
		return
	}
	var out []proto.FrameArrival
	pf := r.partial[id]
	if pf == nil {
		pf = &partialFrame{arrival: proto.FrameArrival{ID: id, First: p.At}, got: map[int]bool{}}
		r.partial[id] = pf
		r.order = append(r.order, id)
	}
	if pf.got[key] {
		r.mu.Unlock()
		return
	}
	pf.got[key] = true
	r.held++
	pf.arrival.Bytes += size
	pf.arrival.Last = p.At
	pf.arrival.Packets = append(pf.arrival.Packets, p)
	if whole(len(pf.got), pf.arrival.Bytes) {
		pf.arrival.Complete = true
		out = append(out, pf.arrival)
		r.finish(id)
	}
	// Over the bound: the oldest incomplete frames are given up now.
	for r.held > maxHeldPieces {
		a, ok := r.popOldest()
		if !ok {
			break
		}
		out = append(out, a)
	}
	r.mu.Unlock()
	for _, a := range out {
		r.deliver(a)
	}
}

// finish forgets partial frame id's pieces and remembers it as done.
func (r *reassembler) finish(id uint32) {
	if pf := r.partial[id]; pf != nil {
		r.held -= len(pf.got)
		delete(r.partial, id)
	}
	if len(r.doneOrder) < maxDoneFrames {
		r.doneOrder = append(r.doneOrder, id)
	} else {
		delete(r.done, r.doneOrder[r.doneNext])
		r.doneOrder[r.doneNext] = id
		r.doneNext = (r.doneNext + 1) % maxDoneFrames
	}
	r.done[id] = true
}

// oldest is the id of the oldest frame still partial, dropping from order
// the ids finished since.
func (r *reassembler) oldest() (uint32, bool) {
	for len(r.order) > 0 {
		id := r.order[0]
		if r.partial[id] != nil {
			return id, true
		}
		r.order = r.order[1:]
	}
	r.order = nil // let the backing array go
	return 0, false
}

// popOldest gives up the oldest partial frame and returns it, incomplete.
func (r *reassembler) popOldest() (proto.FrameArrival, bool) {
	id, ok := r.oldest()
	if !ok {
		return proto.FrameArrival{}, false
	}
	a := r.partial[id].arrival
	r.finish(id)
	return a, true
}

// expire gives up on frames older than the timeout, every tick (a
// quarter of the timeout, and no more often than minExpiryEvery).
func (r *reassembler) expire(tick time.Duration) {
	defer r.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			for _, a := range r.expireAt(now) {
				r.deliver(a)
			}
		}
	}
}

// expireAt removes the frames whose first piece came more than the
// timeout before now and returns them, incomplete, to be delivered; a
// piece of theirs that comes later is ignored. Frames are looked at
// oldest first, and the look stops at the first that is young enough.
func (r *reassembler) expireAt(now time.Time) []proto.FrameArrival {
	var lost []proto.FrameArrival
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		id, ok := r.oldest()
		if !ok || now.Sub(r.partial[id].arrival.First) <= r.timeout {
			return lost
		}
		a, _ := r.popOldest()
		lost = append(lost, a)
	}
}

func (r *reassembler) close() {
	close(r.stop)
	r.wg.Wait()
}
