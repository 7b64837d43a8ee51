package qlogflow

import (
	"bytes"
	"testing"
)

// FuzzRead: no qlog stream (a truncated file, another tool's) makes the
// reader panic, and a trace it reads gives its receiver's view.
func FuzzRead(f *testing.F) {
	f.Add([]byte("\x1e{\"qlog_format\":\"JSON-SEQ\",\"trace\":{\"vantage_point\":{\"type\":\"client\"},\"common_fields\":{\"reference_time\":{\"wall_clock\":\"2026-01-01T00:00:00Z\"}}}}\n\x1e{\"time\":1.5,\"name\":\"transport:packet_received\",\"data\":{\"frames\":[{\"frame_type\":\"stream\",\"stream_id\":0,\"offset\":0,\"length\":100}]}}\n"))
	f.Add([]byte("\x1e{}\n\x1e{\"time\":"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		tr.Receiver()
	})
}
