package experiment

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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
// least a round trip, so the test uses a 40 ms link and allows 5 ms + 10 %:
// well under one RTT, well over what a busy host adds to either client's
// median (up to 6 ms with both CPUs loaded by busy loops). tlab crosscheck
// itself applies the stricter 1 ms + 10 % on whatever link it is given.
// On CI the real clients must be there (scripts/setup installs them);
// elsewhere their absence skips the test.
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
	var differ []string
	for _, c := range checks {
		if tol := 5 + 0.1*c.ExternalMs; math.Abs(c.DiffMs) > tol {
			differ = append(differ, fmt.Sprintf("%s %s: tlab %.2f ms, %s %.2f ms, beyond %.2f ms", c.Protocol, c.Phase, c.TlabMs, c.Client, c.ExternalMs, tol))
		}
	}
	saturated := host.WakeP99Us > 1000 || host.StealPct > 10
	skipped := len(differ) > 0 && saturated
	history := countCrossCheckSkips(t, skipped)
	t.Logf("curl cross-check: %d of %d phases beyond tolerance; host wake-up p99 %.0f µs, %.1f %% stolen; %s",
		len(differ), len(checks), host.WakeP99Us, host.StealPct, history)
	if skipped {
		// Two processes' timings cannot be judged on a saturated machine:
		// tlab's own probe says so, and the test does not pretend. The
		// skip is counted, so that a check that never runs is seen.
		t.Skipf("SKIPPED ON A SATURATED HOST (wake-up p99 %.0f µs, %.1f %% stolen); %d phases differed: %s",
			host.WakeP99Us, host.StealPct, len(differ), strings.Join(differ, "; "))
	}
	for _, d := range differ {
		t.Error(d)
	}
}

// crossCheckRunsBeforeAlarm is how many skips in a row make the
// cross-check fail: a check that never runs checks nothing.
const crossCheckRunsBeforeAlarm = 5

// countCrossCheckSkips appends this run's outcome to the machine's ledger
// (TLAB_CROSSCHECK_LEDGER, or tlab/crosscheck.tsv in the user's cache
// directory) and says how many of its runs were judged and skipped; it
// fails the test when the last crossCheckRunsBeforeAlarm were all skipped.
func countCrossCheckSkips(t *testing.T, skipped bool) string {
	path := os.Getenv("TLAB_CROSSCHECK_LEDGER")
	if path == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "no ledger: " + err.Error()
		}
		path = filepath.Join(dir, "tlab", "crosscheck.tsv")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "no ledger: " + err.Error()
	}
	outcome := "judged"
	if skipped {
		outcome = "skipped"
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "no ledger: " + err.Error()
	}
	fmt.Fprintf(f, "%s\t%s\n", time.Now().UTC().Format(time.RFC3339), outcome)
	f.Close()
	b, _ := os.ReadFile(path)
	var outcomes []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if _, o, ok := strings.Cut(line, "\t"); ok {
			outcomes = append(outcomes, o)
		}
	}
	judged, inARow := 0, 0
	for _, o := range outcomes {
		if o == "judged" {
			judged++
			inARow = 0
		} else {
			inARow++
		}
	}
	if inARow >= crossCheckRunsBeforeAlarm {
		t.Errorf("the curl cross-check was skipped on a saturated host in each of its last %d runs on this machine (%s): it has checked nothing since", inARow, path)
	}
	return fmt.Sprintf("this machine's ledger (%s): judged %d, skipped %d, of which the last %d in a row", path, judged, len(outcomes)-judged, inARow)
}

func missingClient(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing on CI: scripts/setup installs it", what)
	}
	t.Skipf("%s is not installed (scripts/setup installs it)", what)
}
