package experiment

import (
	"math"
	"reflect"
	"slices"
	"strings"

	"tlab/internal/emu"
	"tlab/internal/metrics"
	"tlab/internal/workload"
)

// LateThresholdMs is how late a send must be, against its schedule, to
// count as late. The scheduler itself keeps sends within ~0.1 ms, so a
// larger lateness means the protocol made the request wait.
const LateThresholdMs = 1.0

// Summary is one row per protocol and cell. Its JSON names are stable:
// docs/metrics.md defines each, and every later output uses them.
type Summary struct {
	Profile  string `json:"profile"`
	Protocol string `json:"protocol"`
	Workload string `json:"workload"`
	// Cell parameters.
	IntervalMs float64 `json:"interval_ms"`
	ReqSize    int     `json:"req_size"`
	RespSize   int     `json:"resp_size"`
	Seed       uint64  `json:"seed"`
	RTTMs      float64 `json:"rtt_ms"`

	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	Unsent   int `json:"unsent"`

	DelayP5   float64 `json:"delay_p5_ms"`
	DelayP25  float64 `json:"delay_p25_ms"`
	DelayP50  float64 `json:"delay_p50_ms"`
	DelayP75  float64 `json:"delay_p75_ms"`
	DelayP95  float64 `json:"delay_p95_ms"`
	DelayP99  float64 `json:"delay_p99_ms"`
	DelayMean float64 `json:"delay_mean_ms"`
	DelayStd  float64 `json:"delay_std_ms"`
	JitterMs  float64 `json:"jitter_ms"`
	JitterPct float64 `json:"jitter_pct"`

	BytesPerRequest  float64 `json:"bytes_per_request"`
	BytesPerResponse float64 `json:"bytes_per_response"`
	ConnsPer1000     float64 `json:"conns_per_1000"`
	LateSends        int     `json:"late_sends"`
	LatenessP99Ms    float64 `json:"lateness_p99_ms"`
	OutliersRemoved  int     `json:"outliers_removed"`

	// The settings the result was measured with.
	TLSVersion  string `json:"tls_version"`
	KeyExchange string `json:"key_exchange"`
	Resumption  bool   `json:"resumption"`
	ZeroRTT     bool   `json:"zero_rtt"`
	Congestion  string `json:"tcp_congestion"`
	// The emulator's own release error during this cell, beside the
	// result it may have disturbed.
	EmuReleaseP50Us float64 `json:"emu_release_p50_us"`
	EmuReleaseP99Us float64 `json:"emu_release_p99_us"`
}

// Fields returns the row as a map from its JSON names to values; NaN and
// infinite numbers become nil (null in JSON, NA in R, NaN in pandas).
func (s Summary) Fields() map[string]any {
	m := map[string]any{}
	v := reflect.ValueOf(s)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		f := v.Field(i).Interface()
		if x, ok := f.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			f = nil
		}
		m[name] = f
	}
	return m
}

// summarize computes a row from a cell's records, the link counters of the
// measured window (after the warm-up) and the connections the client
// established in that window.
func summarize(s *Summary, records []workload.Record, window emu.LinkStats, connsOpened int, removeOutliers bool) {
	var measured []workload.Record
	for _, r := range records {
		if !r.Warmup {
			measured = append(measured, r)
		}
	}
	slices.SortFunc(measured, func(a, b workload.Record) int { return a.Seq - b.Seq })
	var delays, lateness []float64
	sent := 0
	for _, r := range measured {
		switch {
		case r.Error == workload.ErrUnsent.Error():
			s.Unsent++
			continue
		case !r.OK():
			s.Errors++
		default:
			delays = append(delays, r.DelayMs)
		}
		sent++
		lateness = append(lateness, r.LatenessMs)
		if r.LatenessMs > LateThresholdMs {
			s.LateSends++
		}
	}
	s.Requests = len(delays)
	if removeOutliers {
		delays, s.OutliersRemoved = metrics.RemoveOutliers(delays, 3)
	}
	d := metrics.Describe(delays)
	s.DelayP5, s.DelayP25, s.DelayP50, s.DelayP75, s.DelayP95, s.DelayP99 = d.P5, d.P25, d.P50, d.P75, d.P95, d.P99
	s.DelayMean, s.DelayStd = d.Mean, d.Std
	s.JitterMs = metrics.Jitter(delays)
	s.JitterPct = s.JitterMs / s.DelayMean * 100
	s.LatenessP99Ms = metrics.Describe(lateness).P99
	// Data volume: every byte the client put on the wire (all frames into
	// the link from its side) per request sent, every byte delivered to
	// it per response received.
	s.BytesPerRequest = ratio(float64(window.Up.RxBytes), float64(sent))
	s.BytesPerResponse = ratio(float64(window.Down.TxBytes), float64(s.Requests))
	s.ConnsPer1000 = ratio(float64(connsOpened)*1000, float64(sent))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
