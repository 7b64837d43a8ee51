// Package experiment runs scenarios: it builds a testbed per cell, starts a
// protocol's server and client on it, drives the client with a workload,
// and turns the records and the emulator's counters into summary rows.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tlab/internal/emu"
	"tlab/internal/proto"
	"tlab/internal/workload"
)

// Comparison runs protocols against each other on one or more link
// profiles with the periodic workload.
type Comparison struct {
	// Profiles are profile stacks ("5g", "wifi+loss-ge-b"); each is a
	// network of the comparison.
	Profiles []string
	// Link overrides every profile field by field ("rate=50Mbit,...").
	Link      string
	Protocols []string
	Workload  workload.Periodic
	Settings  proto.Settings
	Seed      uint64
	// RemoveOutliers applies the 3-scaled-MAD rule to delays.
	RemoveOutliers bool
	// OutDir, when set, receives records.csv and summary.json as the
	// run goes; with Capture also pcap, TLS key log and qlog per cell.
	OutDir  string
	Capture bool
	// EmulatorMode is emu.ModeBusy (default) or emu.ModeSleep.
	EmulatorMode string
	// Progress, when set, is told what the run is doing.
	Progress func(Progress)
}

// Progress is a snapshot of a running comparison.
type Progress struct {
	Cell, Cells int
	Profile     string
	Protocol    string
	Elapsed     time.Duration
	Planned     time.Duration
	Requests    int
	LastDelayMs float64
}

// Cell is one (profile, protocol) pair.
type Cell struct {
	Profile  string
	Protocol string
}

// Cells lists the comparison's cells in the order they run.
func (c Comparison) Cells() []Cell {
	var cells []Cell
	for _, p := range c.Profiles {
		for _, pr := range c.Protocols {
			cells = append(cells, Cell{p, pr})
		}
	}
	return cells
}

// Validate checks everything that can be checked before building anything.
func (c Comparison) Validate() error {
	if len(c.Profiles) == 0 || len(c.Protocols) == 0 {
		return errors.New("need at least one profile and one protocol")
	}
	ov, err := emu.ParseOverrides(c.Link)
	if err != nil {
		return err
	}
	for _, p := range c.Profiles {
		if _, _, err := emu.ResolveLink(p, ov); err != nil {
			return err
		}
	}
	for _, p := range c.Protocols {
		if _, err := proto.Lookup(p); err != nil {
			return err
		}
	}
	if err := c.Workload.Validate(); err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	return c.Settings.Validate()
}

// Specs returns the comparison's cells, ready to run.
func (c Comparison) Specs() ([]CellSpec, error) {
	ov, err := emu.ParseOverrides(c.Link)
	if err != nil {
		return nil, err
	}
	cells := c.Cells()
	specs := make([]CellSpec, len(cells))
	for i, cell := range cells {
		link, _, err := emu.ResolveLink(cell.Profile, ov)
		if err != nil {
			return nil, err
		}
		id := fmt.Sprintf("%02d-%s-%s", i+1, sanitize(cell.Profile), cell.Protocol)
		spec := CellSpec{
			ID: id, Index: i, Total: len(cells), Profile: cell.Profile, Link: link, Protocol: cell.Protocol,
			Workload: c.Workload, Settings: c.Settings, Seed: c.Seed, Rep: 1,
			EmulatorMode: c.EmulatorMode, RemoveOutliers: c.RemoveOutliers,
		}
		if c.Capture && c.OutDir != "" {
			spec.CaptureDir = filepath.Join(c.OutDir, "captures", id)
		}
		specs[i] = spec
	}
	return specs, nil
}

// Run executes every cell in turn. Each summary row is passed to onRow as
// soon as its cell ends; the rows are also returned.
func (c Comparison) Run(ctx context.Context, onRow func(Summary)) ([]Summary, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	specs, err := c.Specs()
	if err != nil {
		return nil, err
	}
	var out *recordWriter
	if c.OutDir != "" {
		if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
		if out, err = createRecords(filepath.Join(c.OutDir, "records.csv"), nil); err != nil {
			return nil, err
		}
		defer out.Close()
	}
	var rows []Summary
	for _, spec := range specs {
		if err := ctx.Err(); err != nil {
			return rows, err
		}
		var sink func(workload.Record) error
		if out != nil {
			sink = func(r workload.Record) error { return out.write(spec, r) }
		}
		row, err := RunCell(ctx, spec, sink, c.Progress)
		if err != nil {
			return rows, fmt.Errorf("%s over %s: %w", spec.Protocol, spec.Profile, err)
		}
		rows = append(rows, row)
		if out != nil {
			if err := out.flush(); err != nil {
				return rows, err
			}
			if err := WriteSummaries(c.OutDir, rows); err != nil {
				return rows, err
			}
		}
		if onRow != nil {
			onRow(row)
		}
	}
	return rows, nil
}

func msOf(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '+' || r == ' ' || r == '.' {
			return '_'
		}
		return r
	}, s)
}
