package analysis

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"tlab/internal/emu"
	"tlab/internal/metrics"
	"tlab/internal/results"
	"tlab/internal/untrusted"
)

// LinkPhase is what one cell's messages met between two changes of its
// links (a timeline's step, a live change, a handover): the answer a
// reader of a handover asks for, lined up by the wall clock that both
// records (sent_unix_ns) and link-events.csv (unix_ns) carry.
type LinkPhase struct {
	Cell, Protocol, Profile string
	Rep                     int
	// Index counts the cell's phases from 0 (before the first change).
	Index int
	// FromS and ToS bound the phase, in seconds into the measured window.
	FromS, ToS float64
	// Change says what changed at the phase's start ("" for the first).
	Change string
	// Messages were sent in the phase; Failed of them never completed;
	// Missed were not answered within the schedule's period (failed
	// ones included), -1 when the cell has no period (interval_ms).
	Messages, Failed, Missed int
	// MedianMs is the completed messages' median delay (NaN: none).
	MedianMs float64
	// LongestGapS is the longest stretch of the phase in which no
	// message completed (from its start to the first completion, between
	// two, from the last to its end): what an application went without.
	LongestGapS float64
}

// LinkPhasesFile is the step's tidy output.
const LinkPhasesFile = "link-phases.csv"

// linkPhaseColumns are the records' columns the step reads.
var linkPhaseColumns = []string{"sent_unix_ns", "sent_ms", "done_ms", "delay_ms"}

func init() {
	Register(Step{
		Name:    "link-phases",
		Doc:     "for each cell whose links changed (a timeline, a live change, a handover): its messages between changes, failed, past their period, their median delay and the longest stretch without a completion, lined up by the wall clock",
		Columns: linkPhaseColumns,
		Files:   []string{LinkPhasesFile},
		Compute: func(v *View, a *Analysis) error {
			phases, err := linkPhases(v)
			if err != nil || len(phases) == 0 {
				return err
			}
			a.SetOutput("link-phases", phases)
			return nil
		},
		Write: func(a *Analysis, dir string) ([]string, error) {
			phases, _ := a.Output("link-phases").([]LinkPhase)
			if len(phases) == 0 {
				return nil, nil
			}
			return []string{LinkPhasesFile}, results.WriteAtomic(filepath.Join(dir, LinkPhasesFile), func(w io.Writer) error {
				return writeLinkPhases(w, phases)
			})
		},
		Render: func(a *Analysis) *Section {
			phases, _ := a.Output("link-phases").([]LinkPhase)
			return linkPhasesSection(phases)
		},
	})
}

// linkChange is one instant at which some links changed.
type linkChange struct {
	unixNs   int64
	windowMs float64
	what     string
}

// changesOf reads a cell's link-events.csv into the instants its links
// changed in the measured window (events within a millisecond of each
// other are one change: a handover moves two directions of two links at
// once). A file an older tlab wrote (no unix_ns) gives none.
func changesOf(dir string) ([]linkChange, error) {
	data, err := untrusted.ReadFile(filepath.Join(dir, emu.LinkEventsFile), emu.MaxLinkEventsFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	events, window, err := emu.ReadLinkEvents(filepath.Join(dir, emu.LinkEventsFile), bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var out []linkChange
	for i, e := range events {
		if e.UnixNs == 0 || window[i] <= 0 {
			continue // the settings at the start, or before the window
		}
		what := fmt.Sprintf("%s %s %s: delay %v, loss %g %%", e.Source, e.Link, e.Direction, e.State.Delay, e.State.Loss*100)
		if n := len(out); n > 0 && e.UnixNs-out[n-1].unixNs < 1e6 {
			if !strings.Contains(out[n-1].what, what) {
				out[n-1].what += "; " + what
			}
			continue
		}
		out = append(out, linkChange{unixNs: e.UnixNs, windowMs: float64(window[i]) / 1e6, what: what})
	}
	return out, nil
}

// phaseRecord is one measured message as the phases need it.
type phaseRecord struct {
	sent, done int64 // wall clock, ns; done 0 when it never completed
	delayMs    float64
}

// linkPhases splits each changed cell's measured messages at its links'
// changes.
func linkPhases(v *View) ([]LinkPhase, error) {
	changes := map[string][]linkChange{}
	rows := map[string]results.Summary{}
	for _, row := range v.Run.Rows {
		c, err := changesOf(results.CellDir(v.Run.Dir, row.Cell))
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", row.Cell, err)
		}
		if len(c) > 0 {
			changes[row.Cell], rows[row.Cell] = c, row
		}
	}
	if len(changes) == 0 || !v.HasRecords() {
		return nil, nil
	}
	recs := map[string][]phaseRecord{}
	err := v.Records(linkPhaseColumns, func(r results.RecordRow) error {
		if r.Warmup || changes[r.Cell] == nil {
			return nil
		}
		sentUnix, sentMs, doneMs, delay := r.Values[0], r.Values[1], r.Values[2], r.Values[3]
		if !results.Measured(sentUnix) {
			return nil // never sent, or a command stack's event: no time
		}
		p := phaseRecord{sent: int64(sentUnix), delayMs: math.NaN()}
		if !r.Failed && results.Measured(delay) && results.Measured(doneMs) && results.Measured(sentMs) {
			p.done, p.delayMs = p.sent+int64((doneMs-sentMs)*1e6), delay
		}
		recs[r.Cell] = append(recs[r.Cell], p)
		return nil
	})
	if errors.Is(err, ErrNoColumn) {
		return nil, nil // records of an older tlab: no wall clock to line up by
	}
	if err != nil {
		return nil, err
	}
	var out []LinkPhase
	for _, row := range v.Run.Rows {
		c, ok := changes[row.Cell]
		if !ok || len(recs[row.Cell]) == 0 {
			continue
		}
		out = append(out, cellPhases(row, c, recs[row.Cell])...)
	}
	return out, nil
}

// cellPhases cuts one cell's messages (in any order) at its changes. The
// window's start is the first change's time less its time in the window;
// its end is the last message's send or completion.
func cellPhases(row results.Summary, changes []linkChange, recs []phaseRecord) []LinkPhase {
	start := changes[0].unixNs - int64(changes[0].windowMs*1e6)
	end := start
	for _, r := range recs {
		end = max(end, r.sent, r.done)
	}
	end++ // the last send or completion belongs to the last phase
	interval := row.Float("interval_ms")
	bounds := []int64{start}
	whats := []string{""}
	for _, c := range changes {
		if c.unixNs < end {
			bounds, whats = append(bounds, c.unixNs), append(whats, c.what)
		}
	}
	bounds = append(bounds, end)
	var out []LinkPhase
	for i := 0; i+1 < len(bounds); i++ {
		from, to := bounds[i], bounds[i+1]
		p := LinkPhase{Cell: row.Cell, Protocol: row.Protocol, Profile: row.Profile, Rep: row.Rep, Index: i,
			FromS: float64(from-start) / 1e9, ToS: float64(to-start) / 1e9, Change: whats[i], Missed: -1}
		if interval > 0 {
			p.Missed = 0
		}
		var delays []float64
		var dones []int64
		for _, r := range recs {
			if r.sent < from || r.sent >= to {
				continue
			}
			p.Messages++
			switch {
			case r.done == 0:
				p.Failed++
				if interval > 0 {
					p.Missed++
				}
			default:
				delays = append(delays, r.delayMs)
				if interval > 0 && r.delayMs > interval {
					p.Missed++
				}
			}
		}
		for _, r := range recs {
			if r.done >= from && r.done < to {
				dones = append(dones, r.done)
			}
		}
		p.MedianMs = math.NaN()
		if len(delays) > 0 {
			slices.Sort(delays)
			p.MedianMs = metrics.Quantile(delays, 0.5)
		}
		slices.Sort(dones)
		gap, last := int64(0), from
		for _, d := range dones {
			gap, last = max(gap, d-last), d
		}
		p.LongestGapS = float64(max(gap, to-last)) / 1e9
		out = append(out, p)
	}
	return out
}

// writeLinkPhases writes the phases as tidy CSV: one row a phase.
func writeLinkPhases(w io.Writer, phases []LinkPhase) error {
	var b strings.Builder
	b.WriteString("cell,protocol,profile,rep,phase,from_s,to_s,change,messages,failed,missed,median_ms,longest_gap_s\n")
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	for _, p := range phases {
		missed := ""
		if p.Missed >= 0 {
			missed = strconv.Itoa(p.Missed)
		}
		fmt.Fprintf(&b, "%s,%s,%s,%d,%d,%s,%s,%s,%d,%d,%s,%s,%s\n", csvField(p.Cell), csvField(p.Protocol), csvField(p.Profile), p.Rep, p.Index,
			num(p.FromS), num(p.ToS), csvField(p.Change), p.Messages, p.Failed, missed, num(p.MedianMs), num(p.LongestGapS))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// csvField quotes a field that needs it (RFC 4180).
func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// linkPhasesSection is the report's table of the first repetition's
// phases (every repetition's are in link-phases.csv).
func linkPhasesSection(phases []LinkPhase) *Section {
	if len(phases) == 0 {
		return nil
	}
	s := &Section{Title: "What each stack met as the network changed",
		Text:   "For each cell whose links changed during its measured window (a timeline's step, tlab link set, a handover), its messages between one change and the next: how many were sent, how many never completed, how many were not answered within the schedule's period, the median delay of those that completed, and the longest stretch in which none completed. Changes and messages are lined up by the host's wall clock (records' sent_unix_ns, link-events.csv's unix_ns). First repetition; every repetition is in link-phases.csv.",
		Header: []string{"cell", "phase (s)", "change at its start", "messages", "failed", "missed", "median ms", "longest gap s"}}
	ordered := slices.Clone(phases)
	slices.SortStableFunc(ordered, func(a, b LinkPhase) int { return cmp.Compare(a.Rep, b.Rep) })
	for _, p := range ordered {
		if p.Rep > 1 {
			break
		}
		missed := "–"
		if p.Missed >= 0 {
			missed = strconv.Itoa(p.Missed)
		}
		median := "–"
		if !math.IsNaN(p.MedianMs) {
			median = strconv.FormatFloat(p.MedianMs, 'f', 2, 64)
		}
		s.Rows = append(s.Rows, []string{p.Protocol + " on " + p.Profile, fmt.Sprintf("%.2f–%.2f", p.FromS, p.ToS), p.Change,
			strconv.Itoa(p.Messages), strconv.Itoa(p.Failed), missed, median, strconv.FormatFloat(p.LongestGapS, 'f', 2, 64)})
	}
	return s
}
