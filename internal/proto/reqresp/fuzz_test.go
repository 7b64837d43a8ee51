package reqresp

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// FuzzFraming: whatever bytes a peer sends, the server's request reader
// and the client's response reader end with an error or a bounded answer,
// never a panic or an allocation beyond the message bound.
func FuzzFraming(f *testing.F) {
	var req bytes.Buffer
	writeRequest(&req, 256, 256)
	f.Add(req.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 4, 'a', 'b'})
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		serveStream(struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(data), &out})
		if out.Len() > 64*(maxMessage+responseHeader) {
			t.Fatalf("answered %d bytes to %d", out.Len(), len(data))
		}
		br := bufio.NewReader(bytes.NewReader(data))
		for range 64 {
			if _, _, n, err := readResponse(br); err != nil {
				break
			} else if n > maxMessage {
				t.Fatalf("read a %d-byte response", n)
			}
		}
	})
}
