package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"tlab/internal/cellrun"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// progressPrinter redraws one status line on a terminal, and prints a line
// per cell otherwise (logs, CI). The line fits the terminal's width as it
// is at each redraw: a line one column too wide wraps, and every redraw
// (four a second) would leave a line behind.
func progressPrinter(w io.Writer) func(cellrun.Progress) {
	tty := isTerminal(w)
	lastCell := 0
	return func(p cellrun.Progress) {
		if !tty {
			if p.Cell != lastCell {
				lastCell = p.Cell
				fmt.Fprintf(w, "[%d/%d] %s over %s...\n", p.Cell, p.Cells, p.Protocol, p.Profile)
			}
			return
		}
		fmt.Fprint(w, "\r\033[K"+progressLine(p, terminalWidth(w)))
	}
}

func clearProgress(w io.Writer) {
	if isTerminal(w) {
		fmt.Fprint(w, "\r\033[K")
	}
}

// terminalWidth is w's terminal's width in columns, 80 where it cannot
// be read.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	return 80
}

// progressLine is the status line for p in at most width-1 columns (the
// last column is left free: a terminal that autowraps moves the cursor to
// the next line once it is written). The parts are dropped least useful
// first as the width shrinks: the record count, the last delay, the bar's
// length, then the stack's name is shortened.
func progressLine(p cellrun.Progress, width int) string {
	limit := max(width-1, 1)
	frac := math.Min(p.Elapsed.Seconds()/math.Max(p.Planned.Seconds(), 1e-9), 1)
	left := time.Duration(float64(p.Cells-p.Cell)*p.Planned.Seconds()*1e9) + p.Planned - p.Elapsed
	count := fmt.Sprintf("[%d/%d]", p.Cell, p.Cells)
	name := p.Protocol + " / " + p.Profile
	clock := fmt.Sprintf("%.0fs/%.0fs", p.Elapsed.Seconds(), p.Planned.Seconds())
	remaining := fmt.Sprintf("~%s left", max(left, 0).Round(time.Second))
	records := fmt.Sprintf("%d rec", p.Records)
	last := fmt.Sprintf("last %.2f ms", p.LastDelayMs)
	bar := func(n int) string {
		filled := int(frac * float64(n))
		return "[" + strings.Repeat("#", filled) + strings.Repeat(".", n-filled) + "]"
	}
	type layout struct {
		bar           int
		records, last bool
	}
	for _, l := range []layout{{20, true, true}, {20, false, true}, {20, false, false}, {10, false, false}, {0, false, false}} {
		parts := []string{count, fmt.Sprintf("%-22s", name)}
		if l.bar > 0 {
			parts = append(parts, bar(l.bar))
		}
		parts = append(parts, clock)
		if l.records {
			parts = append(parts, records)
		}
		if l.last {
			parts = append(parts, last)
		}
		parts = append(parts, remaining)
		if line := strings.Join(parts, " "); utf8.RuneCountInString(line) <= limit {
			return line
		}
	}
	// Narrower still: the stack's name gives way, then everything past
	// the limit.
	rest := " " + clock + " " + remaining
	room := limit - len(count) - len(rest) - 1
	if room >= 4 {
		if r := []rune(name); len(r) > room {
			name = string(r[:room-1]) + "~"
		}
		return count + " " + name + rest
	}
	return (count + rest)[:min(limit, len(count+rest))]
}
