package experiment

import (
	"encoding/json"
	"fmt"
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
	// Cell identifies the cell in its run; Rep is its repetition.
	Cell     string `json:"cell"`
	Profile  string `json:"profile"`
	Protocol string `json:"protocol"`
	Workload string `json:"workload"`
	Rep      int    `json:"rep"`
	// Params are the swept fields' values; they become columns named by
	// their paths.
	Params []Param `json:"-"`
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

// Fields returns the row as a map from its JSON names to values, swept
// fields included; NaN and infinite numbers become nil (null in JSON, NA in
// R, NaN in pandas).
func (s Summary) Fields() map[string]any {
	m := map[string]any{}
	v := reflect.ValueOf(s)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		f := v.Field(i).Interface()
		if x, ok := f.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			f = nil
		}
		m[name] = f
	}
	for _, p := range s.Params {
		m[p.Key] = p.Value
	}
	return m
}

// summaryFieldNames lists the JSON names of Summary's fields in order.
func summaryFieldNames() []string {
	var names []string
	t := reflect.TypeOf(Summary{})
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// summaryFromFields is the inverse of Fields: known names fill the
// struct, the others are swept fields.
func summaryFromFields(m map[string]any) Summary {
	var s Summary
	v := reflect.ValueOf(&s).Elem()
	t := v.Type()
	known := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		known[name] = true
		val, ok := m[name]
		f := v.Field(i)
		switch {
		case !ok:
		case val == nil && f.Kind() == reflect.Float64:
			f.SetFloat(math.NaN())
		case val == nil:
		default:
			b, _ := json.Marshal(val)
			json.Unmarshal(b, f.Addr().Interface())
		}
	}
	var keys []string
	for k := range m {
		if !known[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		s.Params = append(s.Params, Param{Key: k, Value: fmt.Sprint(m[k])})
	}
	return s
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
