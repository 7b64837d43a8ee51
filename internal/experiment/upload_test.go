package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/hostnoise"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/units"
)

// runUpload runs study B's workload on a 10 ms-RTT link and returns the
// rows and every record of the run, by protocol.
func runUpload(t *testing.T, protocols, link, wl string, count int, extra string) ([]results.Summary, map[string][][]string, []string) {
	t.Helper()
	rows, dir := runText(t, fmt.Sprintf("name: b\nprofiles: [ethernet]\nlink: {%s}\nprotocols: [%s]\nworkload: {type: upload, %s}\ncount: %d\n%s", link, protocols, wl, count, extra))
	all := readCSV(t, filepath.Join(dir, "records.csv"))
	by := map[string][][]string{}
	for _, r := range all[1:] {
		by[r[2]] = append(by[r[2]], r)
	}
	return rows, by, all[0]
}

func recColumn(t *testing.T, header []string, rec []string, name string) float64 {
	t.Helper()
	for i, h := range header {
		if h == name {
			if rec[i] == "" {
				return math.NaN()
			}
			var v float64
			if _, err := fmt.Sscan(rec[i], &v); err != nil {
				t.Fatalf("%s = %q", name, rec[i])
			}
			return v
		}
	}
	t.Fatalf("no column %s in %v", name, header)
	return 0
}

// TestCachedLookupsDoNotCrossTheLink: study B's "DNS query response is
// cached". With resolve: cached the name is looked up once across the
// link before the measured uploads; every measured upload's lookup then
// takes well under the link's 10 ms round trip, so a lossy link cannot
// fail an upload at its lookup (with resolve: dns each lookup crosses the
// link and takes at least a round trip).
func TestCachedLookupsDoNotCrossTheLink(t *testing.T) {
	requireRoot(t)
	_, recs, header := runUpload(t, "h1", "rtt: 10ms", "size: 30, resolve: cached", 6, "")
	for _, rec := range recs["h1"] {
		if e := rec[slices.Index(header, "error")]; strings.HasPrefix(e, "reached namelookup") || strings.HasPrefix(e, "reached start") {
			t.Errorf("an upload failed at its lookup: %s", e)
		}
		if l := recColumn(t, header, rec, "time_namelookup_ms"); !(l < 1) && !math.IsNaN(l) {
			t.Errorf("a cached lookup took %.2f ms: it crossed the 10 ms link", l)
		}
	}
	_, dnsRecs, _ := runUpload(t, "h1", "rtt: 10ms", "size: 30, resolve: dns", 4, "")
	for _, rec := range dnsRecs["h1"] {
		if l := recColumn(t, header, rec, "time_namelookup_ms"); !(l >= 9.5) {
			t.Errorf("a lookup across the link took %.2f ms, under its round trip", l)
		}
	}
}

// TestUploadPhasesTakeTheRoundTripsEachStackNeeds: on every protocol the
// phases are ordered, the name lookup crosses the link (one RTT), and the
// handshakes before the request take what the protocol needs: TCP alone 1
// RTT, TCP + TLS 1.3 2, TCP + TLS 1.2 3, QUIC 1.
func TestUploadPhasesTakeTheRoundTripsEachStackNeeds(t *testing.T) {
	requireRoot(t)
	const rtt = 10.0
	want := map[string]float64{"h1": 1, "h1s": 2, "h3": 1, "h2": 3}
	rows13, recs, header := runUpload(t, "h1, h1s, h3", "rtt: 10ms", "size: 3.5KB", 12, "")
	rows12, recs12, _ := runUpload(t, "h2", "rtt: 10ms", "size: 3.5KB", 12, "settings: {tls_version: \"1.2\"}\n")
	recs["h2"] = recs12["h2"]
	for _, r := range append(rows13, rows12...) {
		if r.Int("requests") != 12 || r.IntOr("errors", -1) != 0 {
			t.Errorf("%s: %d requests, %d errors", r.Protocol, r.Int("requests"), r.Int("errors"))
		}
	}
	// Timing is asserted as a busy host cannot break it: every request
	// takes at least the round trips the protocol needs (the link's delay
	// is physics: this orders the stacks), and the fastest of twelve comes
	// within one RTT of them (a host's stalls only ever add time; with
	// both CPUs loaded by busy loops the fastest came within 0.6 RTT).
	for proto, rs := range recs {
		minLookup, minHandshake := math.Inf(1), math.Inf(1)
		for _, rec := range rs {
			ph := map[string]float64{}
			for _, n := range []string{"time_namelookup_ms", "time_connect_ms", "time_appconnect_ms", "time_pretransfer_ms", "time_starttransfer_ms", "time_total_ms"} {
				ph[n] = recColumn(t, header, rec, n)
			}
			order := []float64{ph["time_namelookup_ms"], ph["time_connect_ms"], ph["time_appconnect_ms"], ph["time_pretransfer_ms"], ph["time_starttransfer_ms"], ph["time_total_ms"]}
			prev := 0.0
			for i, v := range order {
				if math.IsNaN(v) && i == 2 && proto == "h1" {
					continue // no TLS: curl reports no appconnect either
				}
				if !(v >= prev) {
					t.Errorf("%s: phases out of order: %v", proto, order)
					break
				}
				prev = v
			}
			lookup := ph["time_namelookup_ms"]
			hs := (ph["time_pretransfer_ms"] - lookup) / rtt
			if lookup < 0.95*rtt || hs < want[proto]-0.05 {
				t.Errorf("%s: lookup %.2f ms, %.2f RTT to the request: faster than the link allows (%.0f RTT after one for the lookup)", proto, lookup, hs, want[proto])
			}
			minLookup, minHandshake = math.Min(minLookup, lookup), math.Min(minHandshake, hs)
		}
		if minLookup > 2*rtt || minHandshake > want[proto]+1 {
			t.Errorf("%s: fastest lookup %.2f ms, fastest %.2f RTT to the request; want about 1 RTT and %.0f RTT", proto, minLookup, minHandshake, want[proto])
		}
	}
}

// TestUploadFailuresAreRecords: a request that cannot connect is a record
// with its error and the phase it reached, never a zero, and the cell goes
// on to its other requests.
func TestUploadFailuresAreRecords(t *testing.T) {
	requireRoot(t)
	rows, recs, header := runUpload(t, "h1", "rtt: 10ms, up: {loss: 100%}", "resolve: static, timeout: 300ms", 3, "")
	if len(rows) != 1 || rows[0].IntOr("requests", -1) != 0 || rows[0].Int("errors") != 3 {
		t.Fatalf("rows %+v", rows)
	}
	for _, rec := range recs["h1"] {
		errCol := -1
		for i, h := range header {
			if h == "error" {
				errCol = i
			}
		}
		if !strings.HasPrefix(rec[errCol], "reached namelookup: ") {
			t.Errorf("error %q does not say the phase it reached", rec[errCol])
		}
		if d := recColumn(t, header, rec, "delay_ms"); !math.IsNaN(d) {
			t.Errorf("a failed request has delay %v, want NA", d)
		}
		if v := recColumn(t, header, rec, "time_connect_ms"); !math.IsNaN(v) {
			t.Errorf("a request that never connected has time_connect %v", v)
		}
	}
}

// TestCrossCheckAgreesWithCurl: tlab's phases agree with Debian's curl
// (h1, h1s) and libcurl 8 (h2, h3). A difference of definition costs at
// least a round trip, so the test uses a 40 ms link and allows 5 ms + 10 %
// (well under one RTT) plus what the host's own noise during the check
// can add to either client's timing (crossCheckTolerance). tlab crosscheck
// itself applies the stricter 1 ms + 10 % on whatever link it is given.
// On CI the real clients must be there (scripts/setup --tests installs them);
// elsewhere their absence skips the test. It is never skipped for noise:
// a noisy host widens the tolerance by what it measured, so the check
// always judges.
func TestCrossCheckAgreesWithCurl(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("curl"); err != nil {
		missingClient(t, "curl")
	}
	if exec.Command("python3", "-c", "import curl_cffi").Run() != nil {
		missingClient(t, "python3 with curl_cffi")
	}
	link := emu.DirectionConfig{Delay: units.Duration(20 * time.Millisecond)}
	probe := hostnoise.Start()
	checks, err := CrossCheck{Protocols: []string{"h1", "h1s", "h2", "h3"}, Link: emu.LinkConfig{Up: link, Down: link},
		Count: 9, Size: 3500, Settings: proto.DefaultSettings(), Seed: 1}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 5+6+6+6 {
		t.Errorf("%d phase checks, want 23", len(checks))
	}
	host := probe.Stop()
	t.Logf("host during the check: wake-up p99 %.0f µs, p99.9 %.0f µs, %.1f %% stolen", host.WakeP99Us, host.WakeP999Us, host.StealPct)
	for _, c := range checks {
		if tol := crossCheckTolerance(c.ExternalMs, host); !(math.Abs(c.DiffMs) <= tol) {
			t.Errorf("%s %s: tlab %.2f ms, %s %.2f ms, beyond %.2f ms", c.Protocol, c.Phase, c.TlabMs, c.Client, c.ExternalMs, tol)
		}
	}
}

// crossCheckTolerance is how far tlab's median of a phase may be from an
// external client's: 5 ms + 10 % (a difference of definition costs a
// round trip, 40 ms here), plus twice the host's wake-up p99.9 (either
// client's timing may wait that long for a CPU) and the stolen share of
// the phase (a hypervisor that takes 15 % of the CPU stretches it by up to
// that much).
func crossCheckTolerance(externalMs float64, host hostnoise.Sample) float64 {
	return 5 + 0.1*externalMs + 2*host.WakeP999Us/1000 + externalMs*host.StealPct/100
}

// TestCrossCheckToleranceFollowsTheHost: on a quiet host the tolerance is
// 5 ms + 10 %; a busy one widens it by what it measured, never narrows it.
func TestCrossCheckToleranceFollowsTheHost(t *testing.T) {
	quiet := hostnoise.Sample{WakeP999Us: 0}
	if got := crossCheckTolerance(40, quiet); !(math.Abs(got-9) <= 1e-9) {
		t.Errorf("quiet host: %.2f ms, want 9 (5 + 10 %% of 40)", got)
	}
	busy := hostnoise.Sample{WakeP999Us: 2000, StealPct: 18}
	if got := crossCheckTolerance(40, busy); !(math.Abs(got-(9+4+7.2)) <= 1e-9) {
		t.Errorf("busy host: %.2f ms, want 20.2 (9 + 2 × 2 ms + 18 %% of 40)", got)
	}
}

func missingClient(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing on CI: scripts/setup --tests installs it", what)
	}
	t.Skipf("%s is not installed (scripts/setup --tests installs it)", what)
}
