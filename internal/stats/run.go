package stats

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"tlab/internal/metrics"
	"tlab/internal/results"
)

// ForRun compares every pair of protocols on each network and set of
// swept values of a run directory, Holm-corrects the p-values of the whole
// run, and judges each. Repeated cells are the sampling unit where a
// pair's cells are repeated; otherwise a cell's records are (for the
// delay only: jitter and bytes are one value per cell).
func ForRun(r *results.Run, seed uint64) ([]Comparison, error) {
	return ForRunOver(r, FileRecords(r), seed)
}

// Records hands fn each record of a run with the number columns named by
// need, as results.ScanRecords does: the run's records.csv read from its
// file (FileRecords) or from one reading shared by every analysis step.
type Records func(need []string, fn func(results.RecordRow) error) error

// FileRecords reads the run's records.csv each time it is asked.
func FileRecords(r *results.Run) Records {
	path := filepath.Join(r.Dir, results.RecordsFile)
	return func(need []string, fn func(results.RecordRow) error) error {
		return results.ScanRecords(path, need, fn)
	}
}

// ForRunOver is ForRun with the run's records from recs.
func ForRunOver(r *results.Run, recs Records, seed uint64) ([]Comparison, error) {
	return compareWithin(r, recs, seed, r.Rows, func(row results.Summary) (string, string, string) {
		return row.Profile, sweptValues(row, ""), row.Protocol
	})
}

// sweptValues joins a row's swept values but the one of key.
func sweptValues(row results.Summary, key string) string {
	var vals []string
	for _, p := range row.Params {
		if p.Key != key {
			vals = append(vals, p.Value)
		}
	}
	return strings.Join(vals, " / ")
}

// AgainstBaseline compares, for each network, protocol and set of the
// other swept values, every value of the swept field key with its
// baseline value: how much does the load (cross.flows: 1 against 0) add?
// A Comparison's Profile is "NETWORK / PROTOCOL", A the baseline value and
// B the other.
func AgainstBaseline(r *results.Run, key, baseline string, seed uint64) ([]Comparison, error) {
	return AgainstBaselineOver(r, FileRecords(r), key, baseline, seed)
}

// AgainstBaselineOver is AgainstBaseline with the run's records from recs.
func AgainstBaselineOver(r *results.Run, recs Records, key, baseline string, seed uint64) ([]Comparison, error) {
	all, err := compareWithin(r, recs, seed, r.Rows, func(row results.Summary) (string, string, string) {
		return row.Profile + " / " + row.Protocol, sweptValues(row, key), row.Param(key)
	})
	if err != nil {
		return nil, err
	}
	var out []Comparison
	for _, c := range all {
		switch baseline {
		case c.A:
			out = append(out, c)
		case c.B:
			// Compared the other way round: B − A from the baseline.
			c.A, c.B = c.B, c.A
			c.MedianA, c.MedianB = c.MedianB, c.MedianA
			c.NA, c.NB = c.NB, c.NA
			c.Diff, c.DiffLow, c.DiffHigh = -c.Diff, -c.DiffHigh, -c.DiffLow
			c.HodgesLeh, c.CliffDelta = -c.HodgesLeh, -c.CliffDelta
			c.Ratio, c.RatioLow, c.RatioHigh = 1/c.Ratio, 1/c.RatioHigh, 1/c.RatioLow
			out = append(out, c)
		}
	}
	// The family is the baseline comparisons only.
	judgeAll(out)
	return out, nil
}

// AcrossProfiles compares network a with network b for each protocol and
// set of swept values (a Comparison's Profile then names the protocol, A
// and B the networks): is a replay of a recorded path as fast as the path?
// Only rows of a and b take part.
func AcrossProfiles(r *results.Run, a, b string, seed uint64) ([]Comparison, error) {
	return acrossProfiles(r, FileRecords(r), a, b, seed)
}

func acrossProfiles(r *results.Run, recs Records, a, b string, seed uint64) ([]Comparison, error) {
	var rows []results.Summary
	for _, row := range r.Rows {
		if row.Profile == a || row.Profile == b {
			rows = append(rows, row)
		}
	}
	return compareWithin(r, recs, seed, rows, func(row results.Summary) (string, string, string) {
		return row.Protocol, sweptValues(row, ""), row.Profile
	})
}

// AgainstRecording compares a real path (network real) with its
// recording (network replay): the medians as AcrossProfiles does, and
// the record delay's 99th percentile (TailsAcrossProfiles) where the run
// kept its records, judged as one family.
func AgainstRecording(r *results.Run, real, replay string, seed uint64) ([]Comparison, error) {
	var recs Records
	if _, err := os.Stat(filepath.Join(r.Dir, results.RecordsFile)); err == nil {
		recs = FileRecords(r)
	}
	return AgainstRecordingOver(r, recs, real, replay, seed)
}

// AgainstRecordingOver is AgainstRecording with the run's records from
// recs, nil when the run kept none.
func AgainstRecordingOver(r *results.Run, recs Records, real, replay string, seed uint64) ([]Comparison, error) {
	cs, err := acrossProfiles(r, recs, real, replay, seed)
	if err != nil {
		return nil, err
	}
	if recs != nil {
		tails, err := tailsAcrossProfiles(r, recs, real, replay, 0.99, seed)
		if err != nil {
			return nil, err
		}
		cs = append(cs, tails...)
		judgeAll(cs)
	}
	return cs, nil
}

// TailsAcrossProfiles compares the q-quantile of the record delays (a
// tail: q = 0.99) between networks a and b, per protocol and swept
// values, the requests of every repetition pooled (the sampling unit is
// the request: consecutive ones share the link's state, so the interval
// is optimistic), a request that never completed counting as +Inf.
func TailsAcrossProfiles(r *results.Run, a, b string, q float64, seed uint64) ([]Comparison, error) {
	return tailsAcrossProfiles(r, FileRecords(r), a, b, q, seed)
}

func tailsAcrossProfiles(r *results.Run, recs Records, a, b string, q float64, seed uint64) ([]Comparison, error) {
	delays, err := readDelays(recs, seed)
	if err != nil {
		return nil, err
	}
	type key struct{ protocol, params string }
	pooled := map[key]map[string][]float64{}
	var order []key
	for _, row := range r.Rows {
		if row.Profile != a && row.Profile != b {
			continue
		}
		k := key{row.Protocol, sweptValues(row, "")}
		if pooled[k] == nil {
			pooled[k] = map[string][]float64{}
			order = append(order, k)
		}
		pooled[k][row.Profile] = append(pooled[k][row.Profile], delays[row.Cell]...)
	}
	var out []Comparison
	for _, k := range order {
		if len(pooled[k][a]) == 0 || len(pooled[k][b]) == 0 {
			continue
		}
		c := CompareQuantile(pooled[k][a], pooled[k][b], q, seed)
		c.Profile, c.Params, c.Metric, c.A, c.B, c.Unit = k.protocol, k.params, metrics.RecordDelay, a, b, "request"
		out = append(out, c)
	}
	return out, nil
}

// compareWithin compares, within each group (by the row's group and its
// swept values), every pair of members, in the order rows first name them
// but for the scenario's baseline protocol, which comes first: every
// other is compared against it as B against A (mean_ratio = T / T of the
// baseline, study D's ξ).
func compareWithin(r *results.Run, recs Records, seed uint64, rows []results.Summary, split func(results.Summary) (group, params, member string)) ([]Comparison, error) {
	type key struct{ profile, params string }
	groups := map[key]map[string][]results.Summary{}
	var order []key
	var protoOrder = map[key][]string{}
	for _, row := range rows {
		group, params, member := split(row)
		k := key{group, params}
		if groups[k] == nil {
			groups[k] = map[string][]results.Summary{}
			order = append(order, k)
		}
		if groups[k][member] == nil {
			protoOrder[k] = append(protoOrder[k], member)
		}
		groups[k][member] = append(groups[k][member], row)
	}
	// The metrics compared are those registered with Verdict (their unit
	// for verdicts), after the delay each record carries.
	if r.Manifest != nil && r.Manifest.Baseline != "" {
		for k, members := range protoOrder {
			if i := slices.Index(members, r.Manifest.Baseline); i > 0 {
				protoOrder[k] = append([]string{members[i]}, slices.Delete(slices.Clone(members), i, i+1)...)
			}
		}
	}
	compared := metrics.Default.Verdicts()
	var delays map[string][]float64
	var out []Comparison
	for _, k := range order {
		protos := protoOrder[k]
		for i := 0; i < len(protos); i++ {
			for j := i + 1; j < len(protos); j++ {
				ra, rb := groups[k][protos[i]], groups[k][protos[j]]
				repeated := len(ra) >= 2 && len(rb) >= 2
				for _, m := range compared {
					var a, b []float64
					unit := "repetition"
					switch {
					case repeated && m.Name == metrics.RecordDelay:
						// The per-cell median of the record delay, by the
						// name each workload gives it.
						for _, col := range RecordDelayMedians {
							if a, b = column(ra, col), column(rb, col); len(a) > 0 {
								break
							}
						}
					case repeated:
						a, b = column(ra, m.Name), column(rb, m.Name)
					case m.Name == metrics.RecordDelay:
						if delays == nil {
							var err error
							if delays, err = readDelays(recs, seed); err != nil {
								return nil, err
							}
						}
						unit = "request"
						for _, row := range ra {
							a = append(a, delays[row.Cell]...)
						}
						for _, row := range rb {
							b = append(b, delays[row.Cell]...)
						}
					default:
						continue // one value per cell: nothing to test
					}
					if len(a) == 0 || len(b) == 0 {
						continue
					}
					c := Compare(a, b, seed)
					c.Profile, c.Params, c.Metric, c.A, c.B, c.Unit = k.profile, k.params, m.Name, protos[i], protos[j], unit
					out = append(out, c)
				}
			}
		}
	}
	judgeAll(out)
	return out, nil
}

// judgeAll corrects the comparisons' p-values as one family (Holm) and
// writes each one's verdict in its metric's unit.
func judgeAll(cs []Comparison) {
	Holm(cs)
	for _, m := range metrics.Default.Verdicts() {
		for i := range cs {
			if cs[i].Metric == m.Name {
				Judge(cs[i:i+1], m.Unit)
			}
		}
	}
}

// RecordDelayMedians are the summary columns holding a cell's median
// record delay, by workload: a response's, a frame's round trip, an MQTT
// message's publish to delivery.
var RecordDelayMedians = []string{"delay_p50_ms", "frame_rtt_p50_ms", "message_latency_p50_ms"}

func column(rows []results.Summary, name string) []float64 {
	var out []float64
	for _, r := range rows {
		if v := r.Float(name); v == v { // not NaN
			out = append(out, v)
		}
	}
	return out
}

// readDelays reads each cell's measured delays from records.csv, a
// record that never completed counting as +Inf (later than any that did:
// a stack that loses its slowest requests must not look faster), keeping
// a seeded random subset of at most MaxPerSample per cell. The analysis's
// View hands on only the rows the summaries used (records.csv's
// in_summary): a re-run cell's discarded attempts and removed outliers
// do not count.
func readDelays(recs Records, seed uint64) (map[string][]float64, error) {
	if recs == nil {
		return nil, fmt.Errorf("the run kept no %s: %w", results.RecordsFile, fs.ErrNotExist)
	}
	r := rand.New(rand.NewPCG(seed, 0x72657276))
	out := map[string][]float64{}
	seen := map[string]int{}
	err := recs([]string{"delay_ms"}, func(row results.RecordRow) error {
		d := row.Values[0]
		if row.Failed {
			d = math.Inf(1)
		}
		if row.Warmup || !results.Measured(d) {
			return nil
		}
		seen[row.Cell]++
		// Reservoir sampling: every delay has the same chance to stay.
		if len(out[row.Cell]) < MaxPerSample {
			out[row.Cell] = append(out[row.Cell], d)
		} else if k := r.IntN(seen[row.Cell]); k < MaxPerSample {
			out[row.Cell][k] = d
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Columns are comparisons.csv's columns (the JSON names).
var Columns = []string{"profile", "params", "metric", "a", "b", "sampling_unit", "n_a", "n_b", "median_a", "median_b",
	"median_diff", "median_diff_ci_low", "median_diff_ci_high", "hodges_lehmann", "cliffs_delta", "mann_whitney_u", "p_value", "p_holm", "mean_ratio", "mean_ratio_ci_low", "mean_ratio_ci_high", "verdict", "quantile"}

// Write writes comparisons.json and comparisons.csv into dir.
func Write(dir string, cs []Comparison) error { return WriteNamed(dir, "comparisons", cs) }

// WriteNamed writes NAME.json and NAME.csv into dir.
func WriteNamed(dir, name string, cs []Comparison) error {
	err := results.WriteAtomic(filepath.Join(dir, name+".json"), func(w io.Writer) error {
		if cs == nil {
			cs = []Comparison{}
		}
		// NaN is not JSON: each comparison goes through a map first.
		rows := []map[string]any{}
		for _, c := range cs {
			rows = append(rows, c.values())
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	})
	if err != nil {
		return err
	}
	return results.WriteAtomic(filepath.Join(dir, name+".csv"), func(w io.Writer) error {
		cw := csv.NewWriter(w)
		if err := cw.Write(Columns); err != nil {
			return err
		}
		for _, c := range cs {
			v := c.values()
			rec := make([]string, len(Columns))
			for i, name := range Columns {
				rec[i] = results.FormatValue(v[name])
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	})
}

// values is the comparison by its JSON names, NaN as nil and an
// infinite value (a median among requests that never completed) as the
// largest double or its negative, as summary.json writes it.
func (c Comparison) values() map[string]any {
	num := func(v float64) any {
		if v != v {
			return nil
		}
		return results.JSONNumber(v)
	}
	return map[string]any{
		"profile": c.Profile, "params": c.Params, "metric": c.Metric, "a": c.A, "b": c.B, "sampling_unit": c.Unit,
		"n_a": c.NA, "n_b": c.NB, "median_a": num(c.MedianA), "median_b": num(c.MedianB), "median_diff": num(c.Diff),
		"median_diff_ci_low": num(c.DiffLow), "median_diff_ci_high": num(c.DiffHigh), "hodges_lehmann": num(c.HodgesLeh),
		"cliffs_delta": num(c.CliffDelta), "mann_whitney_u": num(c.U), "p_value": num(c.P), "p_holm": num(c.PHolm),
		"mean_ratio": num(c.Ratio), "mean_ratio_ci_low": num(c.RatioLow), "mean_ratio_ci_high": num(c.RatioHigh), "verdict": c.Verdict, "quantile": num(c.Quantile),
	}
}
