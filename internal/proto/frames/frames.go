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

// reassembler collects fragments into frames and gives up on a frame
// whose fragments have not all arrived within the timeout.
type reassembler struct {
	mu      sync.Mutex
	timeout time.Duration
	partial map[uint32]*partialFrame
	done    map[uint32]bool
	deliver func(proto.FrameArrival)
	stop    chan struct{}
	wg      sync.WaitGroup
}

type partialFrame struct {
	arrival proto.FrameArrival
	got     map[int]bool
}

func newReassembler(timeout time.Duration, deliver func(proto.FrameArrival)) *reassembler {
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
func (r *reassembler) add(id uint32, key, size int, p proto.Packet, whole func(pieces, bytes int) bool) {
	r.mu.Lock()
	if r.done[id] {
		r.mu.Unlock()
		return
	}
	pf := r.partial[id]
	if pf == nil {
		pf = &partialFrame{arrival: proto.FrameArrival{ID: id, First: p.At}, got: map[int]bool{}}
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
	var complete *proto.FrameArrival
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

// expire gives up on frames older than the timeout, every quarter of it.
func (r *reassembler) expire() {
	defer r.wg.Done()
	t := time.NewTicker(r.timeout / 4)
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
// piece of theirs that comes later is ignored.
func (r *reassembler) expireAt(now time.Time) []proto.FrameArrival {
	var lost []proto.FrameArrival
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, pf := range r.partial {
		if now.Sub(pf.arrival.First) > r.timeout {
			lost = append(lost, pf.arrival)
			delete(r.partial, id)
			r.done[id] = true
		}
	}
	return lost
}

func (r *reassembler) close() {
	close(r.stop)
	r.wg.Wait()
}
