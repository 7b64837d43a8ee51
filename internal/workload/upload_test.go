package workload

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"tlab/internal/proto"
)

// TestUploadRecordFollowsCurl: a record's phases are curl's -w variables,
// its delays study B's (response time = starttransfer − namelookup,
// end-to-end = total − namelookup), worked out here by hand.
func TestUploadRecordFollowsCurl(t *testing.T) {
	msd := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	ph := proto.Phases{NameLookup: msd(1), Connect: msd(11), AppConnect: msd(31), PreTransfer: msd(32), StartTransfer: msd(52), Total: msd(53), Reached: "total", RespBytes: 7}
	r := uploadRecord(4, msd(100), msd(153), 30, ph, nil)
	checks := map[string][2]float64{
		"delay (e2e)":      {r.DelayMs, 52},
		"first byte":       {r.FirstByteMs, 51},
		"connect":          {r.ConnectMs, 10},
		"handshake":        {r.HandshakeMs, 20},
		"response_time_ms": {r.Extra["response_time_ms"], 51},
		"e2e_ms":           {r.Extra["e2e_ms"], 52},
		"time_total_ms":    {r.Extra["time_total_ms"], 53},
		"done":             {r.DoneMs, 153},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %v, want %v", name, c[0], c[1])
		}
	}
	if r.ConnID != 5 || !r.NewConn || r.RespBytes != 7 {
		t.Errorf("%+v", r)
	}
	// QUIC: connect is the socket (0), so the handshake runs from the
	// lookup.
	q := uploadRecord(0, 0, msd(40), 30, proto.Phases{NameLookup: msd(1), AppConnect: msd(21), StartTransfer: msd(39), Total: msd(40), Reached: "total"}, nil)
	if q.HandshakeMs != 20 || q.ConnectMs != 0 {
		t.Errorf("quic: handshake %v, connect %v", q.HandshakeMs, q.ConnectMs)
	}
	// A failure says how far it got and has no delay.
	f := uploadRecord(1, 0, msd(12), 30, proto.Phases{NameLookup: msd(1), Connect: msd(11), Reached: "connect"}, errors.New("reset"))
	if f.Error != "reached connect: reset" || f.DelayMs != 0 || f.OK() {
		t.Errorf("failure: %+v", f)
	}
}

// TestUploadRunsEveryRequestOnItsOwn: through an in-memory fetcher, each
// of the count requests is made with the server up, one record each, a
// failure recorded as such without stopping the others.
func TestUploadRunsEveryRequestOnItsOwn(t *testing.T) {
	f := &memFetcher{failAt: 3}
	env, rec := newEnv(t, "mem", f, fakeHosts{})
	u := Upload{Size: 30, RespSize: 2, Count: 6, Resolve: "static", Timeout: time.Second}
	if err := u.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if !f.served || f.fetches != 6 || len(rec.records) != 6 || rec.windows != 1 {
		t.Fatalf("served %v, %d fetches, %d records, %d windows", f.served, f.fetches, len(rec.records), rec.windows)
	}
	for i, r := range rec.records {
		if (i == 2) != (r.Error != "") {
			t.Errorf("record %d: error %q", i, r.Error)
		}
		if i == 2 && !strings.HasPrefix(r.Error, "reached connect") {
			t.Errorf("the failure does not say how far it got: %s", r.Error)
		}
		// The static lookup takes real (tiny) time; the delay excludes it.
		if e2e := r.Extra["time_total_ms"] - r.Extra["time_namelookup_ms"]; i != 2 && (!(math.Abs(r.DelayMs-e2e) <= 1e-9) || r.RespBytes != 2 || r.Extra["time_total_ms"] != 10) {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if v, ok := rec.notes["conns_opened"]; !ok || v != 0 {
		t.Errorf("conns_opened %v (noted %v)", v, ok)
	}
}
