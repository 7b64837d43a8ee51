// Package flowsim is a deterministic discrete-event simulator of QUIC flow
// control (study C): a sender and a receiver joined by a link, several
// streams, stream-level (MAX_STREAM_DATA) and connection-level (MAX_DATA)
// limits, a receiving application that consumes what arrives, and a simple
// congestion controller that can be switched off. The receiver's window
// policy is an Allowance: the study's three, improved static from its
// related work, and a model of quic-go's are here, and another is one more
// type.
package flowsim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Window is one receive window, of a stream or of the connection, as an
// allowance sees it.
type Window struct {
	// MaxOffset is the limit advertised to the sender (W_maxoffset).
	MaxOffset int64
	// Consumed is what the application has read (C_bytes).
	Consumed int64
	// Size is the current maximum window (W_max) and Upper its bound.
	Size, Upper int64
	// LastUpdate is when the previous update was sent (T_interval is
	// measured from it), and Updates how many were sent.
	LastUpdate time.Duration
	Updates    int
	// FirstRead is when the application first read from the window (set
	// by the simulator), from which quiche times the first update.
	FirstRead time.Duration
	// Occupancy is the buffer occupancy B in percent, as fast autotuning
	// defines it (set by the simulator before each decision).
	Occupancy float64
	// EpochStart and EpochOffset mark where an auto-tuning epoch began,
	// for allowances that judge growth over an epoch (QuicGo). The
	// simulator starts the first epoch when the window's first data
	// arrive.
	EpochStart  time.Duration
	EpochOffset int64
}

// grant advertises a full window beyond what the application has consumed
// (W_maxoffset = C_bytes + W_max) and notes when.
func (w *Window) grant(now time.Duration) {
	w.MaxOffset = w.Consumed + w.Size
	w.LastUpdate = now
	w.Updates++
}

// FirstUpdate is how a growing allowance times its first update, which has
// no previous update to measure T_interval from. Its sources differ, and
// the choice moves when the window first grows (docs/flowsim.md).
type FirstUpdate string

const (
	// FirstUpdateOwn is the allowance's own rule: FirstUpdateStudy for
	// both of the study's growing allowances.
	FirstUpdateOwn FirstUpdate = ""
	// FirstUpdateStudy holds the window through the first two updates
	// and times every later one from the previous update, as both
	// allowances did in the study's own simulation (its Figs. 7b-9b:
	// autotuning's summed stream windows "8 KB" through two updates,
	// 16 KB at the third; fast autotuning's "during the two buffer
	// updates ... maintained at 8 KB", 32 KB after the third;
	// studies.md, study C).
	FirstUpdateStudy FirstUpdate = "study"
	// FirstUpdateHold never grows at the first update, as Chromium's
	// net/quic flow controller did: "if (!prev.IsInitialized()) { ...
	// first window update ...; return; }".
	FirstUpdateHold FirstUpdate = "hold"
	// FirstUpdateFirstRead counts the initial window as an update sent when
	// the first data were read, as quiche's does today: "Treat the initial
	// window as if it is a window update, so if 1/2 the window is used in
	// less than 2 RTTs, the window is increased."
	FirstUpdateFirstRead FirstUpdate = "first-read"
	// FirstUpdateStart counts the initial window as an update sent at the
	// connection's start, as the study's worked example of fast
	// autotuning does (its first update already grows the window).
	FirstUpdateStart FirstUpdate = "start"
)

// firstUpdateRules lists the rules a name may carry after "@".
var firstUpdateRules = []FirstUpdate{FirstUpdateStudy, FirstUpdateHold, FirstUpdateFirstRead, FirstUpdateStart}

// quick reports whether this update comes less than two RTTs after the
// previous one, the first update timed by rule.
func (w *Window) quick(now, rtt time.Duration, rule FirstUpdate) bool {
	prev := w.LastUpdate
	if rule == FirstUpdateStudy && w.Updates < 2 {
		return false
	}
	if w.Updates == 0 {
		switch rule {
		case FirstUpdateHold:
			return false
		case FirstUpdateFirstRead:
			prev = w.FirstRead
		default:
			prev = 0
		}
	}
	return now-prev < 2*rtt
}

// nameWithRule names an allowance with its first-update rule when the rule
// is not the allowance's own.
func nameWithRule(name string, rule, own FirstUpdate) string {
	if rule == FirstUpdateOwn || rule == own {
		return name
	}
	return name + "@" + string(rule)
}

// Allowance decides when a receiver sends a window update and how large the
// window grows. Update is called after the application consumed data; when
// it returns true, the simulator sends MAX_STREAM_DATA (or MAX_DATA) with
// the window's new MaxOffset.
type Allowance interface {
	Name() string
	Update(w *Window, now, rtt time.Duration, mss int64) bool
}

// Static keeps the window fixed and sends an update once the data consumed
// since the last one exceed half the window.
type Static struct{}

func (Static) Name() string { return "static" }

func (Static) Update(w *Window, now, rtt time.Duration, mss int64) bool {
	if w.MaxOffset-w.Consumed >= w.Size/2 {
		return false
	}
	w.grant(now)
	return true
}

// ImprovedStatic (Volodina and Rathgeb) sends the update one MSS earlier:
// once the data consumed exceed half the window minus one MSS.
type ImprovedStatic struct{}

func (ImprovedStatic) Name() string { return "improved-static" }

func (ImprovedStatic) Update(w *Window, now, rtt time.Duration, mss int64) bool {
	if w.MaxOffset-w.Consumed >= w.Size/2+mss {
		return false
	}
	w.grant(now)
	return true
}

// Autotuning is Google QUIC's: at an update, if the previous one was less
// than two RTTs ago, the window doubles, up to its upper bound. Its first
// two updates hold the window, as in the study's simulation, unless First
// says otherwise.
type Autotuning struct{ First FirstUpdate }

func (a Autotuning) Name() string { return nameWithRule("autotuning", a.First, FirstUpdateStudy) }

func (a Autotuning) rule() FirstUpdate {
	if a.First == FirstUpdateOwn {
		return FirstUpdateStudy
	}
	return a.First
}

func (a Autotuning) Update(w *Window, now, rtt time.Duration, mss int64) bool {
	if w.MaxOffset-w.Consumed >= w.Size/2 {
		return false
	}
	if w.quick(now, rtt, a.rule()) {
		w.Size = min(2*w.Size, w.Upper)
	}
	w.grant(now)
	return true
}

// FastAutotuning is the study's proposal: the growth factor depends on the
// buffer occupancy B, from 16 when the buffer is nearly empty to 2 when it
// is three-quarters full:
//
//	W_avail = W_maxoffset - C_bytes
//	if W_avail < W_max / 2:
//	    if T_interval < 2 * RTT:
//	        F = 2 if B >= 75 else 4 if B >= 50 else 8 if B >= 25 else 16
//	        W_max = min(W_max * F, B_upper)
//	    W_maxoffset += W_max - W_avail
//	    send MAX_STREAM_DATA (or MAX_DATA)
//
// Unless First says otherwise the first two updates hold the window, as
// in the study's simulation (FirstUpdateStudy); its worked example, whose
// first update already grows, is FirstUpdateStart.
type FastAutotuning struct{ First FirstUpdate }

func (a FastAutotuning) Name() string {
	return nameWithRule("fast-autotuning", a.First, FirstUpdateStudy)
}

func (a FastAutotuning) Update(w *Window, now, rtt time.Duration, mss int64) bool {
	avail := w.MaxOffset - w.Consumed
	if avail >= w.Size/2 {
		return false
	}
	rule := a.First
	if rule == FirstUpdateOwn {
		rule = FirstUpdateStudy
	}
	if w.quick(now, rtt, rule) {
		f := int64(16)
		switch {
		case w.Occupancy >= 75:
			f = 2
		case w.Occupancy >= 50:
			f = 4
		case w.Occupancy >= 25:
			f = 8
		}
		w.Size = min(w.Size*f, w.Upper)
	}
	// The study's W_maxoffset += W_max - W_avail is C_bytes + W_max.
	w.grant(now)
	return true
}

// allowances holds the study's three, improved static and a model of
// quic-go's, by name.
var allowances = map[string]Allowance{
	"static": Static{}, "improved-static": ImprovedStatic{}, "autotuning": Autotuning{}, "fast-autotuning": FastAutotuning{},
	"quic-go": QuicGo{},
}

// Allowances returns the study's three and improved static, in the study's order.
func Allowances() []Allowance {
	return []Allowance{Static{}, ImprovedStatic{}, Autotuning{}, FastAutotuning{}}
}

// LookupAllowance returns an allowance by name. A growing allowance's name
// may end in "@study", "@hold", "@first-read" or "@start" to choose how
// its first updates are timed (FirstUpdate).
func LookupAllowance(name string) (Allowance, error) {
	if base, rule, ok := strings.Cut(name, "@"); ok {
		return withFirstUpdate(base, FirstUpdate(rule))
	}
	a, ok := allowances[name]
	if !ok {
		var names []string
		for n := range allowances {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown allowance %q: want one of %v", name, names)
	}
	return a, nil
}

// withFirstUpdate returns a growing allowance with its first update timed by rule.
func withFirstUpdate(base string, rule FirstUpdate) (Allowance, error) {
	if !slices.Contains(firstUpdateRules, rule) {
		return nil, fmt.Errorf("allowance %s@%s: unknown first-update rule %q: want study, hold, first-read or start", base, rule, rule)
	}
	switch base {
	case "autotuning":
		return Autotuning{First: rule}, nil
	case "fast-autotuning":
		return FastAutotuning{First: rule}, nil
	}
	return nil, fmt.Errorf("allowance %s@%s: only autotuning and fast-autotuning grow their window, so only they take a first-update rule", base, rule)
}
