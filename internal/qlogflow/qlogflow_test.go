package qlogflow

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A client's trace in quic-go's JSON-SEQ layout: stream 0 gets data out of
// order and once twice, the client advertises new limits, the server says
// it is blocked.
const clientTrace = "\x1e" + `{"file_schema":"urn:ietf:params:qlog:file:sequential","trace":{"vantage_point":{"type":"client"},"common_fields":{"reference_time":{"clock_type":"monotonic","epoch":"unknown","wall_clock_time":"2026-11-23T10:00:00.5Z"}}}}
` + "\x1e" + `{"time":1.0,"name":"transport:parameters_set","data":{"owner":"local","initial_max_data":8192,"initial_max_stream_data_bidi_local":4096,"initial_max_stream_data_bidi_remote":2048}}
` + "\x1e" + `{"time":1.5,"name":"transport:parameters_set","data":{"owner":"remote","initial_max_data":1,"initial_max_stream_data_bidi_local":1}}
` + "\x1e" + `{"time":10.0,"name":"transport:packet_received","data":{"header":{},"frames":[{"frame_type":"stream","stream_id":0,"offset":0,"length":1000}]}}
` + "\x1e" + `{"time":12.0,"name":"transport:packet_received","data":{"frames":[{"frame_type":"stream","stream_id":0,"offset":2000,"length":1000},{"frame_type":"stream","stream_id":4,"offset":0,"length":500}]}}
` + "\x1e" + `{"time":13.0,"name":"transport:packet_sent","data":{"frames":[{"frame_type":"ack"},{"frame_type":"max_stream_data","stream_id":0,"maximum":6096}]}}
` + "\x1e" + `{"time":14.0,"name":"transport:packet_received","data":{"frames":[{"frame_type":"stream","stream_id":0,"offset":1000,"length":1000},{"frame_type":"stream_data_blocked","stream_id":4,"limit":4096}]}}
` + "\x1e" + `{"time":15.0,"name":"transport:packet_received","data":{"frames":[{"frame_type":"stream","stream_id":0,"offset":0,"length":1000}]}}
` + "\x1e" + `{"time":16.0,"name":"transport:packet_sent","data":{"frames":[{"frame_type":"max_data","maximum":12000}]}}
`

func TestReceiverReplaysTheTrace(t *testing.T) {
	tr, err := Read(strings.NewReader(clientTrace))
	if err != nil {
		t.Fatal(err)
	}
	if tr.VantagePoint != "client" || !tr.Reference.Equal(time.Date(2026, 11, 23, 10, 0, 0, 5e8, time.UTC)) {
		t.Fatalf("header: %q %v", tr.VantagePoint, tr.Reference)
	}
	if tr.InitialMaxData != 8192 || tr.InitialMaxStreamDataBidiLocal != 4096 {
		t.Fatalf("local parameters %d %d (the remote ones must not count)", tr.InitialMaxData, tr.InitialMaxStreamDataBidiLocal)
	}
	r := tr.Receiver()
	if len(r.Streams) != 2 || r.Streams[0] != 0 || r.Streams[1] != 4 {
		t.Fatalf("streams %v", r.Streams)
	}
	if r.StreamUpdates != 1 || r.ConnUpdates != 1 || r.Blocked != 1 {
		t.Fatalf("updates %d/%d, blocked %d", r.StreamUpdates, r.ConnUpdates, r.Blocked)
	}
	if r.FirstData != 10*time.Millisecond || r.LastData != 15*time.Millisecond {
		t.Fatalf("data from %v to %v", r.FirstData, r.LastData)
	}
	want := []struct {
		t         time.Duration
		recv      []int64
		maxStream int64
		conn      int64
	}{
		{10 * time.Millisecond, []int64{1000}, 4096, 8192},
		{12 * time.Millisecond, []int64{1000, 500}, 4096, 8192}, // 2000-3000 waits for 1000-2000
		{13 * time.Millisecond, []int64{1000, 500}, 5096, 8192}, // 6096 advertised with 1000 received
		{14 * time.Millisecond, []int64{3000, 500}, 5096, 8192}, // the gap filled: in order to 3000
		{15 * time.Millisecond, []int64{3000, 500}, 5096, 8192}, // a duplicate changes nothing
		{16 * time.Millisecond, []int64{3000, 500}, 5096, 8500}, // 12000 advertised with 3500 received
	}
	if len(r.Points) != len(want) {
		t.Fatalf("%d points, want %d: %+v", len(r.Points), len(want), r.Points)
	}
	for i, w := range want {
		p := r.Points[i]
		if p.T != w.t || !slices.Equal(p.Received, w.recv) || p.MaxStreamWindow != w.maxStream || p.ConnWindow != w.conn {
			t.Errorf("point %d: %+v, want %+v", i, p, w)
		}
	}
}

func TestReadRejectsBrokenFiles(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"truncated": clientTrace[:len(clientTrace)-40],
		"header":    "\x1e{\"trace\":{\"common_fields\":{\"reference_time\":{\"wall_clock_time\":\"yesterday\"}}}}\n",
	} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
