package emu

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"tlab/internal/units"
	"tlab/internal/untrusted"
)

// MaxTimelineFile bounds what is read of a timeline's CSV file: a row is
// a few dozen bytes, so 8 MiB holds more than MaxTimelineSteps rows.
const MaxTimelineFile = 8 << 20

// LoadTimelineCSV reads a timeline's CSV time series from path, through
// the bounded reader for files from elsewhere.
func LoadTimelineCSV(path string) ([]TimelineStep, error) {
	f, err := untrusted.Open(path)
	if err != nil {
		return nil, fmt.Errorf("timeline file: %w", err)
	}
	defer f.Close()
	return ParseTimelineCSV(path, untrusted.Reader(f, path, MaxTimelineFile))
}

// csvColumn reads one column of a timeline CSV: the field it sets and the
// unit its bare numbers are in ("" when each value carries its unit).
type csvColumn struct {
	field string // "time", "ramp" or a timeline field name
	unit  string
}

// csvUnits are the header suffixes that give a column's unit, so that a
// series measured in numbers ("delay_ms") needs no unit on every value.
var csvUnits = map[string]string{
	"s": "s", "ms": "ms", "us": "us", "ns": "ns",
	"pct": "%",
	"bit": "bit", "kbit": "kbit", "mbit": "Mbit", "gbit": "Gbit",
	"bytes": "B",
}

// parseCSVHeader reads the header: time first, then any of ramp and the
// timeline's fields, each once, each optionally with a unit suffix.
func parseCSVHeader(row []string) ([]csvColumn, error) {
	known := map[string]bool{"time": true, "ramp": true}
	for _, f := range timelineFieldNames {
		known[f] = true
	}
	seen := map[string]bool{}
	var cols []csvColumn
	for i, h := range row {
		h = strings.ToLower(strings.TrimSpace(h))
		col := csvColumn{field: h}
		if !known[h] {
			if j := strings.LastIndexByte(h, '_'); j > 0 {
				if u, ok := csvUnits[h[j+1:]]; ok && known[h[:j]] {
					col = csvColumn{field: h[:j], unit: u}
				}
			}
		}
		switch {
		case !known[col.field]:
			return nil, fmt.Errorf("column %q: want time, ramp, %s (a unit may follow: delay_ms, loss_pct, rate_mbit, time_s)", h, strings.Join(timelineFieldNames[:], ", "))
		case seen[col.field]:
			return nil, fmt.Errorf("column %q given twice", col.field)
		case i == 0 && col.field != "time":
			return nil, fmt.Errorf("the first column is %q: want time", h)
		}
		seen[col.field] = true
		cols = append(cols, col)
	}
	if len(cols) < 2 {
		return nil, errors.New("want time and at least one of " + strings.Join(timelineFieldNames[:], ", "))
	}
	return cols, nil
}

// ParseTimelineCSV reads a timeline as a CSV time series: a header naming
// the columns (time first), then one row a step, in time order; an empty
// cell leaves its field as it was. Lines starting with # are comments.
// Errors name the file and the line.
func ParseTimelineCSV(name string, r io.Reader) ([]TimelineStep, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var cols []csvColumn
	var steps []TimelineStep
	for {
		row, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		at := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
		}
		if cols == nil {
			if cols, err = parseCSVHeader(row); err != nil {
				return nil, at("%v", err)
			}
			continue
		}
		if len(row) > len(cols) {
			return nil, at("%d values for %d columns", len(row), len(cols))
		}
		if len(steps) == MaxTimelineSteps {
			return nil, at("more than %d rows", MaxTimelineSteps)
		}
		step := TimelineStep{Where: fmt.Sprintf("%s:%d", name, line)}
		for i, v := range row {
			v = strings.TrimSpace(v)
			if v == "" {
				if i == 0 {
					return nil, at("the time is missing")
				}
				continue
			}
			if err := step.setCSV(cols[i], v); err != nil {
				return nil, at("%s: %v", cols[i].field, err)
			}
		}
		steps = append(steps, step)
	}
	if cols == nil {
		return nil, fmt.Errorf("%s: no header: want a first line such as time,delay,loss", name)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%s: a header and no rows", name)
	}
	if err := (Timeline{Steps: steps}).Validate(); err != nil {
		return nil, err
	}
	return steps, nil
}

// setCSV sets the step's field from one cell, in the column's unit when
// the cell is a bare number.
func (s *TimelineStep) setCSV(col csvColumn, v string) error {
	if col.unit != "" {
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			v += col.unit
		}
	}
	duration := func() (*units.Duration, error) {
		d, err := units.ParseDuration(v)
		return &d, err
	}
	var err error
	switch col.field {
	case "time":
		var d *units.Duration
		d, err = duration()
		s.At = *d
	case "ramp":
		var d *units.Duration
		d, err = duration()
		s.Ramp = *d
	case "delay":
		s.Delay, err = duration()
	case "jitter":
		s.Jitter, err = duration()
	case "loss":
		var r units.Ratio
		r, err = units.ParseRatio(v)
		s.Loss = &r
	case "rate":
		var b units.Bitrate
		b, err = units.ParseBitrate(v)
		s.Rate = &b
	case "queue_packets":
		var n int
		n, err = strconv.Atoi(v)
		if err == nil && n < 0 {
			err = errors.New("negative")
		}
		s.QueuePackets = &n
	case "queue_bytes":
		var b units.Size
		b, err = units.ParseSize(v)
		s.QueueBytes = &b
	}
	return err
}
