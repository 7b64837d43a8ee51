package cross

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/units"
)

// TestValidateNamesTheField: each impossible setting is refused with the
// field the scenario's error points at.
func TestValidateNamesTheField(t *testing.T) {
	neg := units.Duration(-time.Second)
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Flows: -1}, "flows"},
		{Config{Flows: MaxFlows + 1}, "flows"},
		{Config{Flows: 1, Direction: "sideways"}, "direction"},
		{Config{Flows: 1, Protocol: "sctp"}, "protocol"},
		{Config{Flows: 1, Protocol: "quic", CC: "bbr"}, "cc"},
		{Config{Flows: 1, CC: "warp"}, "cc"},
		{Config{Flows: 1, Start: units.Duration(-time.Second)}, "start"},
		{Config{Flows: 1, Start: units.Duration(5 * time.Second), Stop: units.Duration(2 * time.Second)}, "stop"},
		{Config{Flows: 1, Lead: &neg}, "lead"},
		{Config{UDPRate: -1}, "udp_rate"},
	} {
		field, err := c.cfg.Validate()
		if err == nil || field != c.field {
			t.Errorf("%+v: field %q, error %v; want an error on %s", c.cfg, field, err, c.field)
		}
	}
	if field, err := (Config{Flows: 4, Direction: Both, Protocol: "tcp", CC: "cubic", UDPRate: 5e6}).Validate(); err != nil {
		t.Errorf("a valid load refused at %s: %v", field, err)
	}
}

// TestLeadTime: the load leads by DefaultLead unless told, by nothing
// when there is no load, and by exactly what is given, zero included.
func TestLeadTime(t *testing.T) {
	zero := units.Duration(0)
	five := units.Duration(5 * time.Second)
	for _, c := range []struct {
		cfg  Config
		want time.Duration
	}{{Config{}, 0}, {Config{Flows: 1}, DefaultLead}, {Config{UDPRate: 1e6}, DefaultLead}, {Config{Flows: 1, Lead: &zero}, 0}, {Config{Flows: 1, Lead: &five}, 5 * time.Second}} {
		if got := c.cfg.LeadTime(); got != c.want {
			t.Errorf("%+v: lead %v, want %v", c.cfg, got, c.want)
		}
	}
}

// TestFacts: goodput sums over flows; RTT and one-way samples are kept
// apart; a load without samples of a kind has NaN there, not 0.
func TestFacts(t *testing.T) {
	f := Facts(Config{Flows: 2}, []FlowResult{
		{Name: "tcp-up-1", Bytes: 2e6, GoodputMbps: 20, DelayMs: []float64{10, 12, 14}, RTT: true},
		{Name: "tcp-up-2", Bytes: 3e6, GoodputMbps: 30, DelayMs: []float64{16}, RTT: true},
		{Name: "udp-up-1", Bytes: 1e5, GoodputMbps: 1, DelayMs: []float64{5, 7}},
	})
	// The flows that carried data are counted from the flows, not the
	// configuration: one of two that never connected shows.
	if f["cross_flows_carrying"] != 2 {
		t.Errorf("cross_flows_carrying %v, want the 2 bulk flows", f["cross_flows_carrying"])
	}
	if half := Facts(Config{Flows: 2}, []FlowResult{{Name: "tcp-up-1", Bytes: 1, RTT: true}, {Name: "tcp-up-2", RTT: true}}); half["cross_flows_carrying"] != 1 {
		t.Errorf("one of two flows carried nothing: cross_flows_carrying %v, want 1", half["cross_flows_carrying"])
	}
	if f["cross_flows"] != 2 || f["cross_goodput_mbps"] != 51 || f["cross_rtt_p50_ms"] != 13 || f["cross_udp_delay_p50_ms"] != 6 {
		t.Errorf("facts %v", f)
	}
	if p99 := f["cross_rtt_p99_ms"]; p99 < 15.9 || p99 > 16 {
		t.Errorf("rtt p99 %v, want just under 16", p99)
	}
	none := Facts(Config{Flows: 1}, []FlowResult{{Name: "tcp-up-1", GoodputMbps: 10}})
	if !math.IsNaN(none["cross_rtt_p50_ms"]) || !math.IsNaN(none["cross_udp_delay_p50_ms"]) {
		t.Errorf("no samples: %v", none)
	}
	for _, name := range FactNames {
		if _, ok := f[name]; !ok {
			t.Errorf("Facts lacks %s", name)
		}
		if strings.TrimPrefix(name, "cross_") == name {
			t.Errorf("%s: cross columns start with cross_", name)
		}
	}
}

// TestReadLogReadsByName: cross.csv is read by its columns' names: the
// file tlab writes reads back, a file whose columns come in another order
// reads the same, and a bad number is an error with its line.
func TestReadLogReadsByName(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	want := []LogBin{{TimeMs: 100, Flow: "up1", GoodputMbps: 9.5}, {TimeMs: 200, Flow: "up1", GoodputMbps: 8}}
	for name, body := range map[string]string{
		"tlab.csv":      strings.Join(LogColumns, ",") + "\n100.0,up1,118750,9.500,12.1\n200.0,up1,100000,8.000,\n",
		"reordered.csv": "goodput_mbps,delay_ms,flow,time_ms,extra\n9.5,12.1,up1,100,x\n8,,up1,200,y\n",
	} {
		got, err := ReadLog(write(name, body))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, want)
		}
	}
	if _, err := ReadLog(write("bad.csv", strings.Join(LogColumns, ",")+"\n100,up1,1,9.5,\nNaN,up1,1,2,\n")); err == nil || !strings.Contains(err.Error(), "bad.csv:3:") {
		t.Errorf("a bad row: %v", err)
	}
}

// failingWriter refuses every write after the first n bytes.
type failingWriter struct{ left int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errors.New("no space left on device")
	}
	w.left -= len(p)
	return len(p), nil
}

// TestLogWriteErrorsAreNotLost: a cross.csv that cannot be written (a full
// disk) is the run's error at Close, not a file silently cut short.
func TestLogWriteErrorsAreNotLost(t *testing.T) {
	r := &Run{start: time.Now().Add(-time.Second), cancel: func() {}, out: &failingWriter{left: 0},
		flows: []*flow{{name: "up1", bin: 1000, last: math.NaN()}}}
	r.flush()
	if _, err := r.Close(); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("Close after a failed log write: %v", err)
	}
}
