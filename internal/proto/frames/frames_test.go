package frames

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"tlab/internal/proto"
)

// TestFragmentsReassemble: a frame split under the MTU carries its id,
// index and count in every fragment, and its payload comes back whole.
func TestFragmentsReassemble(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789"), 401) // 4010 bytes
	parts := fragment(7, payload, 1000)
	if len(parts) != 5 {
		t.Fatalf("%d fragments, want 5 (4 of 1000 B and one of 10)", len(parts))
	}
	var got []byte
	for i, d := range parts {
		magic, id, idx, count, ok := parseFragHeader(d)
		if !ok || magic != fragMagic || id != 7 || idx != i || count != 5 {
			t.Errorf("fragment %d: %c %d %d/%d %v", i, magic, id, idx, count, ok)
		}
		got = append(got, d[fragHeader:]...)
	}
	if !bytes.Equal(got, payload) {
		t.Error("the fragments do not carry the payload")
	}
	if _, _, _, _, ok := parseFragHeader([]byte("short")); ok {
		t.Error("a short datagram parsed as a fragment")
	}
}

// TestReassemblyTimeout drives the reassembler's clock by hand: a frame
// whose pieces all come is delivered whole, once, however often a piece
// is repeated; one missing a piece is delivered incomplete exactly when
// the timeout has passed since its first piece, not before; a piece that
// comes after that is ignored.
func TestReassemblyTimeout(t *testing.T) {
	var mu sync.Mutex
	var got []proto.FrameArrival
	r := newReassemblerEvery(500*time.Millisecond, time.Hour, func(a proto.FrameArrival) { mu.Lock(); got = append(got, a); mu.Unlock() }) // the ticker never fires
	defer r.close()
	t0 := time.Unix(100, 0)
	whole := func(pieces, _ int) bool { return pieces == 3 }
	piece := func(id uint32, key int, at time.Duration) {
		r.add(id, key, 1000, proto.Packet{Hash: uint64(id)<<8 | uint64(key), At: t0.Add(at), Size: 1012}, whole)
	}
	piece(1, 0, 0)
	piece(1, 1, 10*time.Millisecond)
	piece(1, 1, 11*time.Millisecond) // a duplicate
	piece(1, 2, 20*time.Millisecond)
	piece(2, 0, 5*time.Millisecond)
	piece(2, 2, 30*time.Millisecond) // piece 1 of frame 2 never comes
	if len(got) != 1 || !got[0].Complete || got[0].ID != 1 || got[0].Bytes != 3000 || len(got[0].Packets) != 3 {
		t.Fatalf("after frame 1: %+v", got)
	}
	if lost := r.expireAt(t0.Add(505 * time.Millisecond)); len(lost) != 0 {
		t.Errorf("frame 2 given up %v after its first piece, before the 500 ms timeout", 500*time.Millisecond)
	}
	lost := r.expireAt(t0.Add(506 * time.Millisecond))
	if len(lost) != 1 || lost[0].ID != 2 || lost[0].Complete || lost[0].Bytes != 2000 {
		t.Fatalf("at the timeout: %+v", lost)
	}
	piece(2, 1, 600*time.Millisecond) // too late
	piece(1, 0, 700*time.Millisecond) // and a frame already delivered
	if len(got) != 1 || len(r.expireAt(t0.Add(time.Hour))) != 0 {
		t.Errorf("late pieces were delivered: %+v", got)
	}
}

// TestReassemblyHoldsBoundedPieces: a sender that starts frames and never
// finishes them (one piece of two each) cannot grow the server: past
// maxHeldPieces the oldest frames are given up, incomplete, in the order
// they began, and the pieces held stay at the bound.
func TestReassemblyHoldsBoundedPieces(t *testing.T) {
	var got []proto.FrameArrival
	r := newReassemblerEvery(10*time.Second, time.Hour, func(a proto.FrameArrival) { got = append(got, a) })
	defer r.close()
	never := func(pieces, _ int) bool { return pieces == 2 }
	t0 := time.Unix(100, 0)
	extra := 100
	for i := 0; i < maxHeldPieces+extra; i++ {
		r.add(uint32(i), 0, 1000, proto.Packet{At: t0.Add(time.Duration(i) * time.Microsecond), Size: 1012}, never)
	}
	if len(got) != extra {
		t.Fatalf("%d frames given up, want the %d over the bound", len(got), extra)
	}
	for i, a := range got {
		if a.ID != uint32(i) || a.Complete {
			t.Fatalf("given up %d: frame %d (complete %v), want the oldest, %d, incomplete", i, a.ID, a.Complete, i)
		}
	}
	if r.held != maxHeldPieces || len(r.partial) != maxHeldPieces {
		t.Errorf("held %d pieces in %d frames, want %d", r.held, len(r.partial), maxHeldPieces)
	}
	// A late piece of a frame given up is ignored.
	r.add(0, 1, 1000, proto.Packet{At: t0.Add(time.Second), Size: 1012}, never)
	if _, ok := r.partial[0]; ok {
		t.Error("a late piece of a frame given up began it again")
	}
}

// TestReassemblyRemembersBoundedDone: the finished frames it remembers (so
// that a late piece is ignored) are the last maxDoneFrames, not all.
func TestReassemblyRemembersBoundedDone(t *testing.T) {
	r := newReassemblerEvery(time.Second, time.Hour, func(proto.FrameArrival) {})
	defer r.close()
	one := func(pieces, _ int) bool { return pieces == 1 }
	n := maxDoneFrames + 500
	for i := 0; i < n; i++ {
		r.add(uint32(i), 0, 10, proto.Packet{At: time.Unix(100, 0)}, one)
	}
	if len(r.done) != maxDoneFrames {
		t.Errorf("remembers %d finished frames, want %d", len(r.done), maxDoneFrames)
	}
	if r.done[0] || !r.done[uint32(n-1)] || !r.done[uint32(n-maxDoneFrames)] {
		t.Error("it forgot a recent frame or kept the oldest")
	}
}

// TestTinyReassemblyTimeoutDoesNotPanic: a timeout of 3 ns (a scenario's
// typo, or a controller's) made time.NewTicker panic at a quarter of it.
func TestTinyReassemblyTimeoutDoesNotPanic(t *testing.T) {
	r := newReassembler(3*time.Nanosecond, func(proto.FrameArrival) {})
	time.Sleep(5 * time.Millisecond)
	r.close()
}
