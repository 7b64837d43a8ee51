package frames

import (
	"bufio"
	"bytes"
	"testing"

	"tlab/internal/proto"
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
