package experiment

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tlab/internal/proto"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/workload"
)

func TestMain(m *testing.M) { tbtest.Main(m) }

func requireRoot(t *testing.T) { tbtest.RequirePrivileges(t) }

func comparison(protocols []string, link string, interval time.Duration, count int) Comparison {
	return Comparison{
		Profiles:  []string{"ethernet"},
		Link:      link,
		Protocols: protocols,
		Workload:  workload.Periodic{Interval: interval, ReqSize: 256, RespSize: 256, Count: count, Warmup: 0},
		Settings:  proto.DefaultSettings(),
		Seed:      1,
	}
}

// TestEveryProtocolThroughTheLink: each protocol completes its requests and
// no delay beats the link's RTT.
func TestEveryProtocolThroughTheLink(t *testing.T) {
	requireRoot(t)
	c := comparison(proto.Names(), "rtt=10ms", 20*time.Millisecond, 25)
	rows, err := c.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Requests != 25 || r.Errors != 0 || r.Unsent != 0 {
			t.Errorf("%s: %d requests, %d errors, %d unsent", r.Protocol, r.Requests, r.Errors, r.Unsent)
		}
		if r.DelayP5 < 10 {
			t.Errorf("%s: p5 delay %.3f ms is below the 10 ms RTT", r.Protocol, r.DelayP5)
		}
		// Data volume: at least the payload and the framing/headers.
		if r.BytesPerRequest < 256+54 || r.BytesPerResponse < 256+54 {
			t.Errorf("%s: %.0f B per request, %.0f per response: less than payload and headers", r.Protocol, r.BytesPerRequest, r.BytesPerResponse)
		}
	}
	by := map[string]Summary{}
	for _, r := range rows {
		by[r.Protocol] = r
	}
	// A stack that does more per request puts more bytes on the wire.
	if !(by["h1s"].BytesPerRequest > by["tls"].BytesPerRequest && by["tls"].BytesPerRequest > by["tcp"].BytesPerRequest) {
		t.Errorf("bytes per request: tcp %.0f, tls %.0f, h1s %.0f; want tcp < tls < h1s",
			by["tcp"].BytesPerRequest, by["tls"].BytesPerRequest, by["h1s"].BytesPerRequest)
	}
}

// TestHTTP1OpensConnectionsOnlyWhenRequestsOverlap: below the RTT the
// HTTP/1.1 client needs more than one connection, well above it exactly one.
func TestHTTP1OpensConnectionsOnlyWhenRequestsOverlap(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		interval time.Duration
		atLeast  float64
		atMost   float64
	}{
		{5 * time.Millisecond, 2, 1e9}, // d well below the 20 ms RTT
		// Well above it, and above the first request's TCP + TLS +
		// request (3 RTT), which would otherwise overlap the second.
		{100 * time.Millisecond, 1, 1},
	} {
		c := comparison([]string{"h1s"}, "rtt=20ms", tc.interval, 30)
		rows, err := c.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		// No warm-up: the window holds every connection of the run.
		conns := rows[0].ConnsPer1000 * 30 / 1000
		if conns < tc.atLeast-0.01 || conns > tc.atMost+0.01 {
			t.Errorf("interval %v: %.0f connections for 30 requests, want %.0f..%.0f", tc.interval, conns, tc.atLeast, tc.atMost)
		}
	}
}

// TestNonMultiplexingProtocolIsLateBelowRTT: plain TCP cannot overlap
// requests, so with d below the RTT its sends fall behind schedule.
func TestNonMultiplexingProtocolIsLateBelowRTT(t *testing.T) {
	requireRoot(t)
	c := comparison([]string{"tcp", "quic-streams"}, "rtt=20ms", 10*time.Millisecond, 30)
	rows, err := c.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].LateSends < 10 || rows[0].Unsent == 0 {
		t.Errorf("tcp at d=10ms, RTT 20ms: %d late, %d unsent; want many late and some never sent", rows[0].LateSends, rows[0].Unsent)
	}
	if rows[1].LateSends > 3 {
		t.Errorf("quic-streams multiplexes, yet %d sends were late", rows[1].LateSends)
	}
}

// TestOutputsAreTidyAndWrittenAsTheyCome checks records.csv and
// summary.json, and that pcap, key log and qlog appear with --capture.
func TestOutputsAreTidyAndWrittenAsTheyCome(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	c := comparison([]string{"tcp", "h3"}, "", 10*time.Millisecond, 20)
	c.OutDir, c.Capture = dir, true
	var seen int
	_, err := c.Run(context.Background(), func(Summary) {
		// After each cell the summary on disk holds every row so far.
		var rows []map[string]any
		b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
		json.Unmarshal(b, &rows)
		seen++
		if len(rows) != seen {
			t.Errorf("summary.json holds %d rows after %d cells", len(rows), seen)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(filepath.Join(dir, "records.csv"))
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 41 || len(all[0]) != len(RecordColumns) {
		t.Fatalf("records.csv: %d rows of %d columns, want 41 of %d", len(all), len(all[0]), len(RecordColumns))
	}
	var rows []map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"protocol", "requests", "delay_p5_ms", "delay_p25_ms", "delay_p50_ms", "delay_p75_ms", "delay_p95_ms", "delay_p99_ms",
		"delay_mean_ms", "delay_std_ms", "jitter_ms", "jitter_pct", "bytes_per_request", "bytes_per_response", "conns_per_1000", "late_sends"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("summary row lacks %q", k)
		}
	}
	h3 := filepath.Join(dir, "captures", "02-ethernet-h3")
	for _, p := range []string{"client-eth0.pcap", "server-eth0.pcap", "keys.log"} {
		if st, err := os.Stat(filepath.Join(h3, p)); err != nil || st.Size() == 0 {
			t.Errorf("capture %s missing or empty (%v)", p, err)
		}
	}
	if q, _ := filepath.Glob(filepath.Join(h3, "qlog", "*.sqlog")); len(q) < 2 {
		t.Errorf("want client and server qlog files, found %v", q)
	}
}

// TestTLSSettingsReachTheWire: TLS 1.2 works where TLS runs over TCP, and
// the post-quantum hybrid key exchange enlarges the handshake by about a
// kilobyte each way, visible in the bytes per request of a short run whose
// window includes the handshake.
func TestTLSSettingsReachTheWire(t *testing.T) {
	requireRoot(t)
	perReq := map[string]float64{}
	for _, kex := range []string{"x25519", "x25519mlkem768"} {
		c := comparison([]string{"tls"}, "", 10*time.Millisecond, 10)
		c.Settings.KeyExchange = kex
		rows, err := c.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if rows[0].KeyExchange != kex {
			t.Errorf("row records key exchange %q, want %q", rows[0].KeyExchange, kex)
		}
		perReq[kex] = rows[0].BytesPerRequest
	}
	// ML-KEM-768's share is 1184 bytes: over 10 requests, > 100 B each.
	if d := perReq["x25519mlkem768"] - perReq["x25519"]; d < 100 {
		t.Errorf("hybrid key exchange added %.0f B per request over 10 requests, want > 100", d)
	}
	c := comparison([]string{"tls", "h1s", "h2"}, "", 10*time.Millisecond, 5)
	c.Settings.TLSVersion = "1.2"
	rows, err := c.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Requests != 5 || r.TLSVersion != "1.2" {
			t.Errorf("%s over TLS 1.2: %d requests, recorded version %s", r.Protocol, r.Requests, r.TLSVersion)
		}
	}
}
