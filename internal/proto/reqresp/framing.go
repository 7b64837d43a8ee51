package reqresp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"tlab/internal/proto"
)

// The stream protocols (tcp, tls, quic, quic-streams) carry each request as
// an 8-byte header (payload length, requested response length, both
// big-endian uint32) and the payload; each response as a 4-byte length and
// the payload. Headers are the only bytes tlab adds; they count in the data
// volume like any protocol's headers.
const (
	requestHeader  = 8
	responseHeader = 4
	// maxMessage bounds a message so a corrupted header cannot make a
	// server allocate without limit.
	maxMessage = proto.MaxMessage
)

// payloadPool holds zero-filled buffers for payloads.
var payloadPool = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// writeRequest sends header and payload in one write, so that a small
// request leaves as one segment.
func writeRequest(w io.Writer, reqSize, respSize int) error {
	msg := make([]byte, requestHeader+reqSize)
	binary.BigEndian.PutUint32(msg[0:4], uint32(reqSize))
	binary.BigEndian.PutUint32(msg[4:8], uint32(respSize))
	_, err := w.Write(msg)
	return err
}

// readResponse reads one response and returns when its first byte and its
// last byte arrived, and its payload length.
func readResponse(r *bufio.Reader) (first, done time.Time, n int, err error) {
	var hdr [responseHeader]byte
	if _, err = r.Peek(1); err != nil {
		return
	}
	first = time.Now()
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return
	}
	size := int(binary.BigEndian.Uint32(hdr[:]))
	if size > maxMessage {
		err = fmt.Errorf("response of %d bytes exceeds %d", size, maxMessage)
		return
	}
	if _, err = r.Discard(size); err != nil {
		return
	}
	return first, time.Now(), size, nil
}

// serveStream answers requests on one stream until it ends: it reads each
// request and writes the response it asked for. A buffered reader takes a
// whole small request in one read system call.
func serveStream(rw io.ReadWriter) error {
	var hdr [requestHeader]byte
	bufp := payloadPool.Get().(*[]byte)
	defer payloadPool.Put(bufp)
	br := bufio.NewReaderSize(rw, 16<<10)
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		reqSize := int64(binary.BigEndian.Uint32(hdr[0:4]))
		respSize := int(binary.BigEndian.Uint32(hdr[4:8]))
		if reqSize > maxMessage || respSize > maxMessage {
			return fmt.Errorf("request asks for %d/%d bytes, over %d", reqSize, respSize, maxMessage)
		}
		if _, err := br.Discard(int(reqSize)); err != nil {
			return err
		}
		if err := writeResponse(rw, respSize, *bufp); err != nil {
			return err
		}
	}
}

// writeResponse writes the length and respSize zero bytes; responses up to
// the buffer's size go out in one write.
func writeResponse(w io.Writer, respSize int, buf []byte) error {
	if respSize+responseHeader <= len(buf) {
		clear(buf[:responseHeader+respSize])
		binary.BigEndian.PutUint32(buf[:4], uint32(respSize))
		_, err := w.Write(buf[:responseHeader+respSize])
		return err
	}
	var hdr [responseHeader]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(respSize))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	clear(buf)
	for left := respSize; left > 0; {
		n := min(left, len(buf))
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		left -= n
	}
	return nil
}
