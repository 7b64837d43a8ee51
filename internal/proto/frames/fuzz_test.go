package frames

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"tlab/internal/proto"

	"github.com/pion/rtp"
)

// FuzzFrameStreams: a stream of frames and datagram fragment headers from
// a peer are read without a panic, within the message bound.
func FuzzFrameStreams(f *testing.F) {
	var s bytes.Buffer
	writeStreamFrame(&s, 7, make([]byte, 100))
	f.Add(s.Bytes())
	hdr := make([]byte, fragHeader)
	putFragHeader(hdr, 'F', 3, 1, 4)
	f.Add(hdr)
	f.Add([]byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		for range 64 {
			_, size, _, _, err := readStreamFrame(br)
			if err != nil {
				break
			}
			if size > proto.MaxMessage {
				t.Fatalf("read a %d-byte frame", size)
			}
		}
		if _, _, idx, count, ok := parseFragHeader(data); ok && (idx < 0 || count < 0) {
			t.Fatalf("fragment %d of %d", idx, count)
		}
	})
}

// FuzzRTPFrameExtension: any datagram a peer sends to the RTP port is
// read without a panic; a frame length beyond the message bound is
// refused; and the extension the client writes reads back as written.
func FuzzRTPFrameExtension(f *testing.F) {
	pk := rtp.NewPacketizer(rtpMTU-12, rtpPayloadType, rtpSSRC, rawPayloader{}, rtp.NewFixedSequencer(0), rtpClockRate)
	for _, p := range pk.Packetize(make([]byte, 3000), 3000) {
		p.SetExtension(rtpFrameExtID, frameExtensionBytes(9, 3000))
		b, _ := p.Marshal()
		f.Add(b, uint32(9), uint32(3000))
	}
	f.Add([]byte{0x90, 0x60, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xde, 0, 3, 0x17, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint32(0), uint32(1<<31))
	f.Fuzz(func(t *testing.T, datagram []byte, id, length uint32) {
		var p rtp.Packet
		if p.Unmarshal(datagram) == nil {
			if _, n, ok := frameExtension(&p); ok && (n < 0 || n > proto.MaxMessage) {
				t.Fatalf("a %d-byte frame accepted from a peer", n)
			}
		}
		out := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: rtpPayloadType, SSRC: rtpSSRC}, Payload: datagram}
		if err := out.SetExtension(rtpFrameExtID, frameExtensionBytes(id, int(length))); err != nil {
			t.Fatal(err)
		}
		b, err := out.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var back rtp.Packet
		if err := back.Unmarshal(b); err != nil {
			t.Fatalf("a packet the client writes does not parse: %v", err)
		}
		gotID, gotLen, ok := frameExtension(&back)
		if want := int64(length) <= proto.MaxMessage; ok != want || (ok && (gotID != id || gotLen != int(length))) {
			t.Fatalf("wrote frame %d of %d bytes, read %d of %d (ok %v)", id, length, gotID, gotLen, ok)
		}
	})
}

// FuzzReassembly feeds the reassembler pieces in any order, repeated,
// late or never, with its clock driven by the input: every frame is
// delivered at most once; a complete one holds every distinct piece once
// and its bytes are their sum; an incomplete one only after the timeout.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{0, 0, 10, 0, 1, 10, 0, 2, 10, 1, 0, 200, 1, 1, 255})
	f.Add([]byte{3, 1, 0, 3, 1, 0, 3, 0, 250, 3, 2, 250})
	f.Fuzz(func(t *testing.T, script []byte) {
		const timeout = 500 * time.Millisecond
		const count = 3 // pieces per frame
		delivered := map[uint32]proto.FrameArrival{}
		r := newReassembler(time.Hour, func(a proto.FrameArrival) {
			if _, twice := delivered[a.ID]; twice {
				t.Fatalf("frame %d delivered twice", a.ID)
			}
			delivered[a.ID] = a
		})
		defer r.close()
		r.timeout = timeout
		t0 := time.Unix(1000, 0)
		now := t0
		first := map[uint32]time.Time{}
		for len(script) >= 3 {
			id, key, step := uint32(script[0]%8), int(script[1]%4), time.Duration(script[2])*5*time.Millisecond
			script = script[3:]
			now = now.Add(step)
			if _, ok := first[id]; !ok {
				first[id] = now
			}
			size := 100 * (key + 1)
			r.add(id, key, size, proto.Packet{Hash: uint64(id)<<8 | uint64(key), At: now, Size: size}, func(pieces, _ int) bool { return pieces == count })
			for _, a := range r.expireAt(now) {
				if now.Sub(a.First) <= timeout || a.Complete {
					t.Fatalf("frame %d given up %v after its first piece (timeout %v), complete %v", a.ID, now.Sub(a.First), timeout, a.Complete)
				}
				r.deliver(a)
			}
		}
		for id, a := range delivered {
			keys := map[uint64]bool{}
			bytes := 0
			for _, p := range a.Packets {
				if keys[p.Hash] {
					t.Fatalf("frame %d holds a piece twice", id)
				}
				keys[p.Hash] = true
				bytes += p.Size
			}
			if bytes != a.Bytes || !a.First.Equal(first[id]) {
				t.Fatalf("frame %d: %d bytes counted, pieces hold %d; first %v, want %v", id, a.Bytes, bytes, a.First, first[id])
			}
			if a.Complete != (len(a.Packets) == count) {
				t.Fatalf("frame %d: complete %v with %d of %d pieces", id, a.Complete, len(a.Packets), count)
			}
		}
	})
}
