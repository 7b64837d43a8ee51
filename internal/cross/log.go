package cross

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// LogColumns are cross.csv's columns: a flow's 100 ms bin (its start from
// the cell's start), the flow, the bytes its receiver counted in the bin,
// their goodput and the flow's delay sample.
var LogColumns = []string{"time_ms", "flow", "bytes", "goodput_mbps", "delay_ms"}

// LogBin is one row of cross.csv.
type LogBin struct {
	TimeMs      float64
	Flow        string
	GoodputMbps float64
}

// ReadLog reads a cell's cross.csv by its columns' names (a reordered or
// widened file still reads right); a row it cannot read is an error with
// its line.
func ReadLog(path string) ([]LogBin, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"time_ms", "flow", "goodput_mbps"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no column %s", path, need)
		}
	}
	var out []LogBin
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		field := func(name string) string {
			if i := col[name]; i < len(rec) {
				return rec[i]
			}
			return ""
		}
		ms, err1 := strconv.ParseFloat(field("time_ms"), 64)
		mbps, err2 := strconv.ParseFloat(field("goodput_mbps"), 64)
		if err1 != nil || err2 != nil || math.IsNaN(ms) || math.IsNaN(mbps) {
			return nil, fmt.Errorf("%s:%d: want time_ms and goodput_mbps numbers", path, line)
		}
		out = append(out, LogBin{TimeMs: ms, Flow: field("flow"), GoodputMbps: mbps})
	}
}
