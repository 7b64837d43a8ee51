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

// FuzzUDPDatagram: whatever datagram reaches the udp stack's server or
// client, its parser refuses it or reads a header that marshals back to
// the same bytes, and never asks for a response over one datagram.
func FuzzUDPDatagram(f *testing.F) {
	f.Add(udpDatagram{Kind: udpRequest, Seq: 7, RespSize: 256}.marshal(100))
	f.Add(udpDatagram{Kind: udpResponse, Seq: 7}.marshal(256))
	f.Add([]byte("TUQ\x00\x00\x00\x00\x01\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseUDPDatagram(b)
		if err != nil {
			return
		}
		if d.Kind == udpRequest && d.RespSize > maxUDPPayload {
			t.Fatalf("accepted a request for %d bytes", d.RespSize)
		}
		again := d.marshal(len(b) - udpHeader)
		if !bytes.Equal(again[:udpHeader], append(b[:3:3], 0, b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11])) {
			t.Fatalf("%x read as %+v, which marshals to %x", b[:udpHeader], d, again[:udpHeader])
		}
	})
}
