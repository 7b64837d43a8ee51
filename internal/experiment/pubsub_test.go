package experiment

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/results"
	"tlab/internal/scenario"
	"tlab/internal/testbed/tbtest"
)

// runText parses a scenario and sweeps it into a fresh directory, quality
// rule off (a test asserts on the one attempt it ran).
func runText(t *testing.T, src string) ([]results.Summary, string) {
	t.Helper()
	requireRoot(t)
	sc, err := scenario.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	rows, err := Sweep{Scenario: sc, Dir: dir, SkipCalibration: true, Quality: cellrun.Quality{Mode: "off"}}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rows, dir
}

// pubsubRecords reads a run's records.csv as maps by column, per cell.
func pubsubRecords(t *testing.T, dir string) map[string][]map[string]string {
	t.Helper()
	recs := readCSV(t, filepath.Join(dir, results.RecordsFile))
	out := map[string][]map[string]string{}
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = rec[i]
		}
		out[m["cell"]] = append(out[m["cell"]], m)
	}
	return out
}

// TestPubSubEveryTransportDeliversInOrder: over a publisher—broker—
// subscriber chain of two 10 ms RTT links, every MQTT transport delivers
// every message, in order, in no less than the two one-way trips, and Δ
// covers them all.
func TestPubSubEveryTransportDeliversInOrder(t *testing.T) {
	rows, dir := runText(t, `name: d
profiles: [ethernet]
protocols: [mqtt-tcp, mqtt-tls, mqtt-quic]
link: {rtt: 10ms, rate: 20Mbit}
workload: {type: pubsub, messages: 15, qos: 1}
`)
	recs := pubsubRecords(t, dir)
	for _, r := range rows {
		if r.Int("messages") != 15 || r.IntOr("messages_failed", -1) != 0 || r.Label("cell_error") != "" {
			t.Errorf("%s: %d messages, %d failed, error %q", r.Protocol, r.Int("messages"), r.Int("messages_failed"), r.Label("cell_error"))
		}
		if d := r.Float("completion_ms"); !(d >= 15*10) {
			t.Errorf("%s: Δ %.1f ms for 15 messages that each cross two 5 ms one-way links", r.Protocol, d)
		}
		// Under 20 ms on a quiet host; a busy one adds what it measured.
		if lat, most := r.Float("message_latency_p50_ms"), 20+tbtest.NoiseSlackMs(10, r); !(lat >= 10 && lat < most) {
			t.Errorf("%s: median publish-to-delivery latency %.2f ms, want two 5 ms one-way trips (under %.2f ms)", r.Protocol, lat, most)
		}
		for i, rec := range recs[r.Cell] {
			if rec["seq"] != strconv.Itoa(i) || rec["error"] != "" {
				t.Errorf("%s: record %d is seq %s, error %q", r.Protocol, i, rec["seq"], rec["error"])
			}
		}
	}
}

// TestPubSubZeroRTTOnSecondConnection: pattern reconnect over QUIC with
// 0-RTT allowed sends the CONNECT as early data on every connection after
// the first, never on the first; TLS resumes from the second connection.
// Δ+ then takes a round trip less over QUIC than over TLS.
func TestPubSubZeroRTTOnSecondConnection(t *testing.T) {
	rows, dir := runText(t, `name: d
profiles: [ethernet]
protocols: [mqtt-tls, mqtt-quic]
link: {rtt: 20ms, rate: 20Mbit}
topology: {type: chain, hosts: [publisher, broker, subscriber], links: {broker-subscriber: backbone-1ms}}
workload: {type: pubsub, pattern: reconnect, messages: 5}
settings: {zero_rtt: true}
`)
	recs := pubsubRecords(t, dir)
	byProto := byProtocol(rows)
	for _, r := range rows {
		cell := recs[r.Cell]
		if len(cell) != 6 {
			t.Fatalf("%s: %d records, want the warm-up connection and 5 reconnections", r.Protocol, len(cell))
		}
		for i, rec := range cell {
			early, resumed := rec["early_data"] == "true", rec["resumed"] == "true"
			if rec["conn_id"] != strconv.Itoa(i+1) || rec["new_conn"] != "true" {
				t.Errorf("%s record %d: conn %s, new %s", r.Protocol, i, rec["conn_id"], rec["new_conn"])
			}
			switch {
			case i == 0 && (early || resumed):
				t.Errorf("%s: the first connection used 0-RTT (%v) or resumed (%v)", r.Protocol, early, resumed)
			case i > 0 && !resumed:
				t.Errorf("%s: connection %d did not resume", r.Protocol, i+1)
			case i > 0 && early != (r.Protocol == "mqtt-quic"):
				t.Errorf("%s: connection %d early data %v", r.Protocol, i+1, early)
			}
		}
		if r.Protocol == "mqtt-quic" && r.Float("used_0rtt") != 1 {
			t.Errorf("mqtt-quic: used_0rtt %.2f, want 1", r.Float("used_0rtt"))
		}
	}
	// TLS: TCP, TLS and CONNECT/CONNACK round trips before the PUBLISH;
	// QUIC 0-RTT: CONNECT/CONNACK only: two 20 ms round trips apart. Over
	// twelve runs on a busy day the gap was 33.5-40.7 ms; a gap above one
	// and a half round trips tells two saved from one.
	tls, quic := byProto["mqtt-tls"].Float("reconnect_ms"), byProto["mqtt-quic"].Float("reconnect_ms")
	t.Logf("Δ+ over TLS %.1f ms, over QUIC with 0-RTT %.1f ms", tls, quic)
	if !(tls-quic >= 30) {
		t.Errorf("Δ+ over TLS %.1f ms, over QUIC with 0-RTT %.1f ms: want QUIC about two 20 ms round trips faster", tls, quic)
	}
}

// TestPubSubMosquittoAgreesWithEmbedded: the same cells through Mosquitto
// and through the embedded broker give latencies within a millisecond
// (the broker's own processing is microseconds against the link's 10 ms).
func TestPubSubMosquittoAgreesWithEmbedded(t *testing.T) {
	if _, err := exec.LookPath("mosquitto"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("mosquitto is missing on CI: scripts/setup --tests installs it")
		}
		t.Skip("mosquitto is not installed (scripts/setup --tests installs it)")
	}
	src := `name: d
profiles: [ethernet]
protocols: [mqtt-tcp, mqtt-tls]
link: {rtt: 10ms, rate: 20Mbit}
workload: {type: pubsub, messages: 30, qos: 1}
matrix:
  workload.broker: [embedded, mosquitto]
`
	// That Mosquitto ran is seen from outside: a mosquitto process that
	// was not there before appears while the cells run. The watcher
	// looks every 50 ms: at every 5 ms, reading /proc in this process
	// slowed the embedded broker beside it by 1.5 to 4 ms.
	before := processesNamed("mosquitto")
	seen := map[int]bool{}
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			for pid := range processesNamed("mosquitto") {
				if !before[pid] {
					seen[pid] = true
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	rows, _ := runText(t, src)
	close(stop)
	<-watched
	if len(seen) < 2 {
		t.Errorf("%d mosquitto processes seen while the cells ran; want one per mosquitto cell (2)", len(seen))
	}
	lat := map[string]map[string]float64{}
	byProto := map[string][]results.Summary{} // the two brokers' rows
	for _, r := range rows {
		byProto[r.Protocol] = append(byProto[r.Protocol], r)
		if r.IntOr("messages_failed", -1) != 0 {
			t.Fatalf("%s via %s: %d failed: %s", r.Protocol, r.Param("workload.broker"), r.Int("messages_failed"), r.Label("cell_error"))
		}
		if lat[r.Protocol] == nil {
			lat[r.Protocol] = map[string]float64{}
		}
		lat[r.Protocol][r.Param("workload.broker")] = r.Float("message_latency_p50_ms")
	}
	for proto, m := range lat {
		t.Logf("%s: median latency %.3f ms via mosquitto, %.3f ms embedded", proto, m["mosquitto"], m["embedded"])
		// Within 1 ms on a quiet host, plus what the host's noise during
		// either cell can add.
		if d, most := math.Abs(m["mosquitto"]-m["embedded"]), 1+tbtest.NoiseSlackMs(m["embedded"], byProto[proto]...); !(d < most) {
			t.Errorf("%s: median latency %.2f ms via mosquitto, %.2f ms embedded: differ by %.2f ms (at most %.2f)", proto, m["mosquitto"], m["embedded"], d, most)
		}
	}
}

// TestPubSubConnectionLostFailsTheCellOnly: an outage longer than the
// message timeout in the middle of the pattern fails that cell, with a
// record per message (delivered ones, the failed one, the never sent), and
// the sweep goes on to the next protocol, which meets the same outage.
func TestPubSubConnectionLostFailsTheCellOnly(t *testing.T) {
	rows, dir := runText(t, `name: d
profiles: [ethernet]
protocols: [mqtt-tcp, mqtt-quic]
link: {rtt: 10ms, outages: [{at: 1200ms, for: 5s}]}
workload: {type: pubsub, messages: 400, timeout: 1s}
`)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want both cells", len(rows))
	}
	recs := pubsubRecords(t, dir)
	for _, r := range rows {
		if r.Label("cell_error") == "" {
			t.Errorf("%s: the cell was not failed", r.Protocol)
		}
		cell := recs[r.Cell]
		ok, failed, unsent := 0, 0, 0
		for _, rec := range cell {
			switch {
			case rec["error"] == "":
				ok++
			case len(rec["error"]) > 9 && rec["error"][:9] == "not sent:":
				unsent++
			default:
				failed++
			}
		}
		if len(cell) != 400 || ok == 0 || failed != 1 || unsent == 0 {
			t.Errorf("%s: %d records: %d delivered, %d failed, %d never sent", r.Protocol, len(cell), ok, failed, unsent)
		}
		if !math.IsNaN(r.Float("completion_ms")) {
			t.Errorf("%s: Δ %.1f although a message failed", r.Protocol, r.Float("completion_ms"))
		}
	}
}

// TestPubSubSharedWiFi: three publishers on one shared 802.11 access all
// run, and with 30 % frame errors and 3 retries (0.8 % residual loss,
// which TCP repairs) the recorded one gets every message through. That
// all three ran is read off the air, not the topology: the shared access
// carries well over twice the bytes per recorded message that it carries
// with one station. (More than three times: the two others have no
// subscriber beyond the broker, study D's subscriber following one
// publisher only, so they pace on the broker's receipt, a round trip of
// the access link, where the recorded one waits for the subscriber
// behind a further 25 ms link.)
func TestPubSubSharedWiFi(t *testing.T) {
	shared := `name: d
profiles: [wifi-shared]
protocols: [mqtt-tcp]
link: {wifi: {frame_error_rate: 30%, retries: 3}}
topology: {type: shared-access, stations: STATIONS, station: publisher, server: broker, then: [subscriber], links: {broker-subscriber: wan-25ms}}
workload: {type: pubsub, messages: 20}
`
	rows, _ := runText(t, strings.Replace(shared, "STATIONS", "3", 1))
	alone, _ := runText(t, strings.Replace(shared, "STATIONS", "1", 1))
	r := rows[0]
	if r.Int("publishers") != 3 || r.Int("messages") != 20 || r.IntOr("messages_failed", -1) != 0 {
		t.Errorf("%d publishers, %d messages, %d failed", r.Int("publishers"), r.Int("messages"), r.Int("messages_failed"))
	}
	three, one := r.Float("wire_bytes_per_message"), alone[0].Float("wire_bytes_per_message")
	if ratio := three / one; !(ratio > 2.5 && ratio < 7) {
		t.Errorf("the shared access carries %.0f B per recorded message with 3 stations, %.0f B with 1: %.2f times, want 2.5 to 7 (two more publishers, each pacing on the broker)", three, one, ratio)
	}
	// Two links of 25 ms RTT: at least 25 ms per message.
	if lat := r.Float("message_latency_p50_ms"); !(lat >= 25) {
		t.Errorf("median latency %.2f ms over two 12.5 ms one-way links", lat)
	}
}

// TestPubSubPipelinedZeroRTT: with the PUBLISH written right behind the
// CONNECT, a resumed QUIC connection carries both as 0-RTT data, so a
// message reaches the broker in one one-way trip: Δ+ under one round trip
// of the publisher's link. TCP still needs its handshake first.
func TestPubSubPipelinedZeroRTT(t *testing.T) {
	rows, _ := runText(t, `name: d
profiles: [ethernet]
protocols: [mqtt-tcp, mqtt-quic]
link: {rtt: 20ms, rate: 20Mbit}
topology: {type: chain, hosts: [publisher, broker, subscriber], links: {broker-subscriber: backbone-1ms}}
workload: {type: pubsub, pattern: reconnect, messages: 5, pipeline: true}
settings: {zero_rtt: true}
`)
	by := byProtocol(rows)
	quic, tcp := by["mqtt-quic"], by["mqtt-tcp"]
	// Δ+ is one one-way trip (10 ms), under the round trip on a quiet host
	// (a busy one adds what it measured); 0-RTT itself is used_0rtt.
	if most := 20 + tbtest.NoiseSlackMs(10, quic); quic.Float("used_0rtt") != 1 || !(quic.Float("reconnect_ms") < most) {
		t.Errorf("pipelined QUIC: 0-RTT %.2f, Δ+ %.1f ms; want 0-RTT on every reconnection and Δ+ under the 20 ms round trip (%.2f ms with the host's noise)", quic.Float("used_0rtt"), quic.Float("reconnect_ms"), most)
	}
	if d, most := tcp.Float("reconnect_ms"), 40+tbtest.NoiseSlackMs(30, tcp); !(d >= 30 && d < most) {
		t.Errorf("pipelined TCP: Δ+ %.1f ms; want the SYN's round trip and the one-way trip, about 30.5 ms (under %.2f ms)", d, most)
	}
	if _, err := scenario.Parse("p.yaml", []byte("name: p\nprofiles: [ethernet]\nprotocols: [mqtt-tcp]\nworkload: {type: pubsub, pattern: reconnect, pipeline: true, qos: 1}\n")); err == nil || !strings.Contains(err.Error(), "QoS 0") {
		t.Errorf("a pipelined QoS 1 publish: %v", err)
	}
	if _, err := scenario.Parse("p.yaml", []byte("name: p\nprofiles: [ethernet]\nprotocols: [mqtt-tcp]\nworkload: {type: pubsub, pipeline: true}\n")); err == nil || !strings.Contains(err.Error(), "pipeline") {
		t.Errorf("pipelining a pattern that keeps one connection: %v", err)
	}
}

// processesNamed returns the PIDs of the processes whose command is name.
func processesNamed(name string) map[int]bool {
	out := map[int]bool{}
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		b, err := os.ReadFile(c)
		if err != nil || strings.TrimSpace(string(b)) != name {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(c))); err == nil {
			out[pid] = true
		}
	}
	return out
}
