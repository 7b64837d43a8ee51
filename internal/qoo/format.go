package qoo

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"tlab/internal/untrusted"
)

// The file format is LibreQoS's qoo_profiles.json, schema_version 2:
//
//	{"schema_version": 2, "default_profile_id": "web_browsing",
//	 "profiles": [{"id": "...", "name": "...", "description": "...",
//	   "latency": [{"percentile": 95, "low_ms": 200, "high_ms": 50}],
//	   "loss_percent": {"low": 5, "high": 0.5},
//	   "latency_normalization": {"mode": "none"},
//	   "loss_handling": "strict"}]}
//
// where "low" is the bad bound (the draft's CPUP) and "high" the good one
// (its ROP), for latency and loss alike. LibreQoS's percentiles are whole
// numbers; tlab also reads 99.9. loss_handling matters to LibreQoS, whose
// loss is inferred from TCP retransmissions; tlab counts lost messages
// exactly, so both settings score the same. throughput_min_mbps is tlab's
// own field, the draft's minimum required throughput, which LibreQoS's
// format has no place for; a file without it reads as LibreQoS reads it.
// per_interval, tlab's too, makes the latency bounds multiples of the
// cell's request interval (a control loop's period); such a profile has
// no meaning for LibreQoS, and tlab qoo --json leaves it out.

// wireFile and the types below are the format as LibreQoS writes it.
type wireFile struct {
	SchemaVersion    int           `json:"schema_version"`
	DefaultProfileID string        `json:"default_profile_id,omitempty"`
	Profiles         []wireProfile `json:"profiles"`
}

type wireProfile struct {
	ID                   string          `json:"id"`
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Latency              []wireLatency   `json:"latency"`
	LossPercent          wireRange       `json:"loss_percent"`
	LatencyNormalization *wireNormalizer `json:"latency_normalization,omitempty"`
	LossHandling         string          `json:"loss_handling,omitempty"`
	// ThroughputMinMbps is tlab's own field: the draft's minimum required
	// throughput, which LibreQoS's format lacks.
	ThroughputMinMbps *float64 `json:"throughput_min_mbps,omitempty"`
	// PerInterval is tlab's own too: the latency bounds are multiples of
	// the cell's request interval.
	PerInterval bool `json:"per_interval,omitempty"`
}

type wireLatency struct {
	Percentile float64 `json:"percentile"`
	LowMs      float64 `json:"low_ms"`
	HighMs     float64 `json:"high_ms"`
}

type wireRange struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

type wireNormalizer struct {
	Mode     string        `json:"mode"`
	Ms       *float64      `json:"ms,omitempty"`
	Baseline *wireBaseline `json:"baseline,omitempty"`
}

type wireBaseline struct {
	Type       string  `json:"type"`
	Ms         float64 `json:"ms,omitempty"`
	Percentile float64 `json:"percentile,omitempty"`
}

// File is a table of profiles and its default.
type File struct {
	Default  string
	Profiles []Profile
}

// Lookup returns the profile id names.
func (f File) Lookup(id string) (Profile, bool) {
	for _, p := range f.Profiles {
		if p.ID == id {
			return p, true
		}
	}
	return Profile{}, false
}

// IDs are the profiles' ids, in the file's order.
func (f File) IDs() []string {
	var out []string
	for _, p := range f.Profiles {
		out = append(out, p.ID)
	}
	return out
}

// maxFile bounds a profiles file: a table of a few profiles is a few KB.
const maxFile = 1 << 20

// Parse reads a profiles file in LibreQoS's format, strictly: an unknown
// field, a wrong type or a bound out of range is an error naming the file
// and, where the decoder knows it, the line.
func Parse(name string, r io.Reader) (File, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxFile {
		return File{}, fmt.Errorf("%s: over %d bytes: not a profiles file", name, maxFile)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireFile
	if err := dec.Decode(&w); err != nil {
		return File{}, fmt.Errorf("%s:%d: %w", name, lineOf(data, err), err)
	}
	if dec.More() {
		return File{}, fmt.Errorf("%s: more than one JSON value", name)
	}
	if w.SchemaVersion != 2 {
		return File{}, fmt.Errorf("%s: schema_version %d: want 2 (LibreQoS's qoo_profiles.json)", name, w.SchemaVersion)
	}
	var f File
	var errs []string
	seen := map[string]bool{}
	for i, wp := range w.Profiles {
		p := Profile{ID: wp.ID, Name: wp.Name, Description: wp.Description,
			Loss: Bounds{Optimal: wp.LossPercent.High, Unacceptable: wp.LossPercent.Low}}
		if wp.ThroughputMinMbps != nil {
			p.MinThroughputMbps = *wp.ThroughputMinMbps
		}
		p.PerInterval = wp.PerInterval
		for _, l := range wp.Latency {
			p.Latency = append(p.Latency, LatencyPoint{Percentile: l.Percentile, OptimalMs: l.HighMs, UnacceptableMs: l.LowMs})
		}
		if n := wp.LatencyNormalization; n != nil {
			p.Normalization.Mode = n.Mode
			switch {
			case n.Mode == "threshold_offset_ms" && n.Ms != nil:
				p.Normalization.OffsetMs = *n.Ms
			case n.Mode == "threshold_offset_ms":
				errs = append(errs, fmt.Sprintf("profile %d (%s): threshold_offset_ms needs ms", i+1, wp.ID))
			case n.Mode == "excess_over_baseline" && n.Baseline != nil && n.Baseline.Type == "fixed_ms":
				p.Normalization.BaselineMs = n.Baseline.Ms
			case n.Mode == "excess_over_baseline" && n.Baseline != nil && n.Baseline.Type == "percentile":
				p.Normalization.BaselinePercentile = n.Baseline.Percentile
			case n.Mode == "excess_over_baseline":
				errs = append(errs, fmt.Sprintf("profile %d (%s): excess_over_baseline needs a baseline of type fixed_ms or percentile", i+1, wp.ID))
			}
		}
		switch wp.LossHandling {
		case "", "strict", "confidence_weighted":
		default:
			errs = append(errs, fmt.Sprintf("profile %d (%s): loss_handling %q: want strict or confidence_weighted", i+1, wp.ID, wp.LossHandling))
		}
		for _, e := range p.Validate() {
			errs = append(errs, fmt.Sprintf("profile %d (%s): %s", i+1, wp.ID, e))
		}
		if seen[p.ID] {
			errs = append(errs, fmt.Sprintf("profile %d: id %q given twice", i+1, p.ID))
		}
		seen[p.ID] = true
		f.Profiles = append(f.Profiles, p)
	}
	if len(f.Profiles) == 0 {
		errs = append(errs, "no profiles")
	}
	f.Default = w.DefaultProfileID
	if f.Default != "" && !seen[f.Default] {
		errs = append(errs, fmt.Sprintf("default_profile_id %q names no profile", f.Default))
	}
	if len(errs) > 0 {
		return File{}, fmt.Errorf("%s: %s", name, strings.Join(errs, "; "))
	}
	return f, nil
}

// lineOf finds the line an error from encoding/json points at: its offset
// for syntax and type errors, and the first mention of an unknown field.
func lineOf(data []byte, err error) int {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	default:
		if _, field, ok := strings.Cut(err.Error(), "unknown field "); ok {
			off = int64(bytes.Index(data, []byte(strings.Trim(field, `"`))))
		}
	}
	if off < 0 || off > int64(len(data)) {
		return 1
	}
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

//go:embed profiles.json
var builtin []byte

// Builtin is tlab's own table: a profile for each study's application,
// with the source of each number in its description.
func Builtin() File {
	f, err := Parse("qoo/profiles.json", bytes.NewReader(builtin))
	if err != nil {
		panic(err) // tested: the embedded file parses
	}
	return f
}

// BuiltinJSON is tlab's table as LibreQoS reads it: every profile but
// those whose bounds follow the request interval, which LibreQoS could
// only read as milliseconds (their ids are in left).
func BuiltinJSON() (b []byte, left []string) {
	f := Builtin()
	w := wireFile{SchemaVersion: 2, DefaultProfileID: f.Default}
	for _, p := range f.Profiles {
		if p.PerInterval {
			left = append(left, p.ID)
			continue
		}
		w.Profiles = append(w.Profiles, p.wire())
	}
	b, _ = json.MarshalIndent(w, "", "  ")
	return append(b, '\n'), left
}

// Resolve finds a requirement profile: one of tlab's by id, or a LibreQoS
// profiles file, FILE#ID for one of its profiles (without #ID, its default
// or its first).
func Resolve(spec string) (Profile, error) {
	builtin := Builtin()
	if p, ok := builtin.Lookup(spec); ok {
		return p, nil
	}
	path, id, _ := strings.Cut(spec, "#")
	f, err := untrusted.Open(path)
	if err != nil {
		return Profile{}, fmt.Errorf("%q is neither one of tlab's profiles (%s) nor a file: %w", spec, strings.Join(builtin.IDs(), ", "), err)
	}
	defer f.Close()
	file, err := Parse(path, f)
	if err != nil {
		return Profile{}, err
	}
	if id == "" {
		id = file.Default
	}
	if id == "" {
		return file.Profiles[0], nil
	}
	p, ok := file.Lookup(id)
	if !ok {
		return Profile{}, fmt.Errorf("%s has no profile %q: it has %s", path, id, strings.Join(file.IDs(), ", "))
	}
	return p, nil
}

// Wire writes p alone as a LibreQoS profiles file, which Parse reads back
// (a run's manifest keeps the profile it was scored against so).
func (p Profile) Wire() []byte {
	b, _ := json.Marshal(wireFile{SchemaVersion: 2, DefaultProfileID: p.ID, Profiles: []wireProfile{p.wire()}})
	return b
}

// wire is p in the file's form.
func (p Profile) wire() wireProfile {
	w := wireProfile{ID: p.ID, Name: p.Name, Description: p.Description,
		LossPercent: wireRange{Low: p.Loss.Unacceptable, High: p.Loss.Optimal}, LossHandling: "strict"}
	if p.MinThroughputMbps > 0 {
		t := p.MinThroughputMbps
		w.ThroughputMinMbps = &t
	}
	w.PerInterval = p.PerInterval
	for _, l := range p.Latency {
		w.Latency = append(w.Latency, wireLatency{Percentile: l.Percentile, LowMs: l.UnacceptableMs, HighMs: l.OptimalMs})
	}
	switch n := p.Normalization; n.Mode {
	case "threshold_offset_ms":
		ms := n.OffsetMs
		w.LatencyNormalization = &wireNormalizer{Mode: n.Mode, Ms: &ms}
	case "excess_over_baseline":
		b := &wireBaseline{Type: "fixed_ms", Ms: n.BaselineMs}
		if n.BaselinePercentile > 0 {
			b = &wireBaseline{Type: "percentile", Percentile: n.BaselinePercentile}
		}
		w.LatencyNormalization = &wireNormalizer{Mode: n.Mode, Baseline: b}
	default:
		w.LatencyNormalization = &wireNormalizer{Mode: "none"}
	}
	return w
}
