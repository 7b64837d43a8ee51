package metrics

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"tlab/internal/results"
)

// Kind says where a summary column comes from.
type Kind string

const (
	// Parameter columns identify the cell (the workload's key parameters,
	// the link's RTT); the runner sets them.
	Parameter Kind = "parameter"
	// Measured columns are computed from the cell's records and counters.
	Measured Kind = "measured"
	// Setting columns say which protocol settings the row ran with.
	Setting Kind = "setting"
	// Instrument columns are the emulator's own figures during the cell.
	Instrument Kind = "instrument"
)

// Metric is one summary column: its stable name, unit, definition and how
// it is computed. Registering a metric is all it takes for summary.json,
// summary.csv, the terminal and HTML tables and docs/metrics.md to know it;
// a workload lists the metrics it produces.
type Metric struct {
	Name string
	Kind Kind
	// Unit is the unit of the value ("ms", "B", "%", "fraction"); "" is
	// for counts alone, which summary.parquet types as integers
	// (ColumnType).
	Unit string
	// Header is the short column title in tables ("P50 ms").
	Header string
	// Precision is the number of decimals shown in tables.
	Precision int
	// Definition is one or two sentences for docs/metrics.md.
	Definition string
	// Verdict marks a metric that tlab stats compares between protocols
	// (one value per repetition, where cells are repeated), with a
	// verdict in its unit.
	Verdict bool
	// OverCompleted marks a figure computed over the messages that
	// completed only (a mean, a spread, a jitter): it cannot see the ones
	// that never did, so an answer that requires it also requires them
	// all to complete. Percentiles need no mark: they count a message that
	// never completed as a delay beyond any bound.
	OverCompleted bool
	// Bounds are the least and the largest value the metric can take,
	// where they are fixed by its definition (0 and 100 for a share in
	// percent); the largest is +Inf where only the least is fixed (0 for
	// a latency, which has no largest value); nil where neither is. A
	// sequential test may bet on a bounded mean (package explore), which
	// needs both, or on a mean above a bound, which needs the least.
	Bounds []float64
	// Compute returns the value from a cell's input; nil for parameters
	// and settings, which the runner sets, and for facts (then the value
	// is Input.Facts[Name]).
	Compute func(*Input) float64
}

// Registry holds metrics in registration order. The zero value is empty
// and usable; Default is the registry tlab's packages register into.
type Registry struct {
	list   []Metric
	byName map[string]int
}

// Default is the registry every workload registers its metrics in, at
// init, as protocols and workloads register themselves.
var Default = &Registry{}

// Register adds m; a second metric of the same name is a programming error.
func (r *Registry) Register(m Metric) {
	if m.Name == "" || m.Kind == "" || m.Definition == "" {
		panic(fmt.Sprintf("metrics: %q needs a name, a kind and a definition", m.Name))
	}
	if r.byName == nil {
		r.byName = map[string]int{}
	}
	if _, dup := r.byName[m.Name]; dup {
		panic("metrics: " + m.Name + " registered twice")
	}
	if m.Header == "" {
		m.Header = m.Name
	}
	r.byName[m.Name] = len(r.list)
	r.list = append(r.list, m)
}

// Register adds m to the default registry.
func Register(m Metric) { Default.Register(m) }

// Lookup returns the named metric.
func (r *Registry) Lookup(name string) (Metric, bool) {
	i, ok := r.byName[name]
	if !ok {
		return Metric{}, false
	}
	return r.list[i], true
}

// Lookup returns the named metric of the default registry.
func Lookup(name string) (Metric, bool) { return Default.Lookup(name) }

// All returns every metric in registration order.
func (r *Registry) All() []Metric { return slices.Clone(r.list) }

// All returns the default registry's metrics.
func All() []Metric { return Default.All() }

// Check reports names that are not registered.
func (r *Registry) Check(names []string) error {
	var unknown []string
	for _, n := range names {
		if _, ok := r.Lookup(n); !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unregistered metrics: %s", strings.Join(unknown, ", "))
	}
	return nil
}

// Format renders a value for a table with the metric's precision; "-" for
// a value that could not be measured, "inf" for one beyond any bound (a
// percentile among messages that never completed). An unregistered name
// gets two decimals.
func (r *Registry) Format(name string, v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	prec := 2
	if m, ok := r.Lookup(name); ok {
		prec = m.Precision
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// Counters are what the emulator counted on one direction of a link
// during the measured window.
type Counters struct {
	RxPackets, RxBytes uint64 // frames that entered the link
	TxPackets, TxBytes uint64 // frames the link delivered
	Drops              uint64
	// The one-way delay of every frame the link delivered, as a passive
	// probe on both ends sees it, from the start of its transmission
	// (emu.DirectionStats.Sent): its mean, standard deviation and mean
	// step between consecutive frames (exact), and its median and 99th
	// percentile (from a histogram, within 12.5 %).
	DelayMeanMs, DelayStdMs, DelayStepMs, DelayP50Ms, DelayP99Ms float64
	// The same delay from the frame's arrival at the link, its wait in the
	// sender's transmit queue included (emu.DirectionStats.Delivered).
	QueuedDelayMeanMs, QueuedDelayP99Ms float64
}

// Input is what a cell's metrics are computed from.
type Input struct {
	// Records are the measured records (warm-up excluded), by Seq.
	Records []results.Record
	// Up and Down are the counters of the link the workload measures, up
	// being from the workload's first role (the client) outward.
	Up, Down Counters
	// NoLink says the link counters do not measure the workload alone:
	// a run across a real path has none, and cross traffic shares the
	// link. Metrics of bytes on the wire are then NaN, not a wrong figure.
	NoLink bool
	// Facts are figures the runner and the workload noted (rtt_ms,
	// conns_opened, emu_release_p99_us, ...).
	Facts map[string]float64
	// RemoveOutliers applies the 3-scaled-MAD rule to delays.
	RemoveOutliers bool

	delays     []float64
	sorted     []float64
	unfinished *int
	dist       *Distribution
	removed    int
	computed   bool
}

// Bytes returns n as a float, or NaN when the link was not counted.
func (in *Input) Bytes(n uint64) float64 {
	if in.NoLink {
		return math.NaN()
	}
	return float64(n)
}

// DelayDistribution describes Delays, computed once.
func (in *Input) DelayDistribution() Distribution {
	if in.dist == nil {
		d := Describe(in.Delays())
		in.dist = &d
	}
	return *in.dist
}

// sortedDelays are Delays sorted, then +Inf for each unfinished record:
// every measured message, in the order of its delay.
func (in *Input) sortedDelays() []float64 {
	if in.sorted == nil {
		in.sorted = sortedCounting(in.Delays(), in.Unfinished())
	}
	return in.sorted
}

// DelayQuantile is the q-quantile of every measured record's delay, one
// that never completed counting as beyond any bound (QuantileCounting
// over Delays, sorted once).
func (in *Input) DelayQuantile(q float64) float64 { return Quantile(in.sortedDelays(), q) }

// Fact returns a noted figure, NaN when it was not noted.
func (in *Input) Fact(name string) float64 {
	if v, ok := in.Facts[name]; ok {
		return v
	}
	return math.NaN()
}

// Unfinished counts the measured records that never completed: sent and
// failed (a timeout, a reset, a frame or message lost), or never sent.
func (in *Input) Unfinished() int {
	if in.unfinished == nil {
		n := 0
		for _, r := range in.Records {
			if !r.OK() {
				n++
			}
		}
		in.unfinished = &n
	}
	return *in.unfinished
}

// Delays returns the delays of the completed records in Seq order, after
// the outlier rule when asked for, computed once.
func (in *Input) Delays() []float64 {
	if !in.computed {
		for _, r := range in.Records {
			if r.OK() {
				in.delays = append(in.delays, r.DelayMs)
			}
		}
		if in.RemoveOutliers {
			in.delays, in.removed = RemoveOutliers(in.delays, OutlierK)
		}
		in.computed = true
	}
	return in.delays
}

// Compute returns the values of the named metrics for in, in order, as
// summary fields. A fact-type metric without Compute takes its value from
// in.Facts; parameters and settings are skipped (the runner sets them).
func (r *Registry) Compute(names []string, in *Input) ([]results.Field, error) {
	var out []results.Field
	for _, n := range names {
		m, ok := r.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("metric %q is not registered", n)
		}
		switch {
		case m.Compute != nil:
			out = append(out, results.Field{Name: n, Value: m.Compute(in)})
		case m.Kind == Measured || m.Kind == Instrument:
			out = append(out, results.Field{Name: n, Value: in.Fact(n)})
		}
	}
	return out, nil
}

// ColumnType declares a summary column's type for summary.parquet: a
// metric without a unit is a count (an integer),
// any other metric or parameter a number; a setting, and a column the
// registry does not know, is typed by its values.
func (r *Registry) ColumnType(column string) results.ColumnType {
	m, ok := r.Lookup(column)
	switch {
	case !ok || m.Kind == Setting:
		return results.Inferred
	case m.Unit == "":
		return results.Integer
	}
	return results.Number
}

// ColumnType declares a summary column's type from the default registry.
func ColumnType(column string) results.ColumnType { return Default.ColumnType(column) }

// RecordDelay is the delay each record carries (a response, a frame's
// round trip, an upload's end-to-end delay): stats compares it record by
// record in a single cell, and by its per-cell median where cells repeat.
const RecordDelay = "delay_ms"

// Verdicts lists the metrics stats compares between protocols, in
// registration order, after RecordDelay (a record column, unit ms).
func (r *Registry) Verdicts() []Metric {
	out := []Metric{{Name: RecordDelay, Kind: Measured, Unit: "ms", Verdict: true}}
	for _, m := range r.list {
		if m.Verdict {
			out = append(out, m)
		}
	}
	return out
}
