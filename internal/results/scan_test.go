package results

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanRecordsReadsByName: the one reader of records.csv gives each
// row's cell, warm-up and asked-for numbers by column name, whatever the
// columns' order, NaN for an empty field; a file of format 1 names cells
// by protocol and profile; a missing column or a word where a number
// belongs is an error with the file, line and column.
func TestScanRecordsReadsByName(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	type got struct {
		cell   string
		warm   bool
		d, s   float64
		dValid bool
	}
	scan := func(path string) ([]got, error) {
		var out []got
		err := ScanRecords(path, []string{"delay_ms", "sent_ms"}, func(r RecordRow) error {
			out = append(out, got{r.Cell, r.Warmup, r.Values[0], r.Values[1], Measured(r.Values[0])})
			return nil
		})
		return out, err
	}
	rows, err := scan(write("a.csv", "sent_ms,cell,warmup,delay_ms,protocol,profile\n10,c1,true,1.5,tcp,lan\n20,c1,false,,tcp,lan\n30,c2,false,2.5,h3,lan\n"))
	if err != nil || len(rows) != 3 || rows[0] != (got{"c1", true, 1.5, 10, true}) || rows[1].dValid || rows[2].cell != "c2" || rows[2].d != 2.5 {
		t.Errorf("rows %+v, %v", rows, err)
	}
	rows, err = scan(write("v1.csv", "protocol,profile,warmup,delay_ms,sent_ms\ntcp,lan,false,1,5\n"))
	if err != nil || len(rows) != 1 || rows[0].cell != "tcp|lan" {
		t.Errorf("format 1: %+v, %v", rows, err)
	}
	if _, err := scan(write("nocol.csv", "cell,warmup,delay_ms\nc,false,1\n")); err == nil || !strings.Contains(err.Error(), "no column sent_ms") {
		t.Errorf("a missing column: %v", err)
	}
	if _, err := scan(write("word.csv", "cell,warmup,delay_ms,sent_ms\nc,false,1,5\nc,false,fast,6\n")); err == nil || !strings.Contains(err.Error(), "word.csv:3: column delay_ms") {
		t.Errorf("a word for a number: %v", err)
	}
}

// TestIntOfAMissingMetricIsNoCount: a metric that vanished (missing, or
// NaN) reads -1 from Int, so that a check for 0 failures cannot pass on
// it; a present one rounds.
func TestIntOfAMissingMetricIsNoCount(t *testing.T) {
	s := Summary{Fields: []Field{{Name: "errors", Value: 0.0}, {Name: "requests", Value: 11.6}, {Name: "lost", Value: math.NaN()}}}
	for name, want := range map[string]int{"errors": 0, "requests": 12, "lost": -1, "vanished": -1} {
		if got := s.Int(name); got != want {
			t.Errorf("Int(%s) = %d, want %d", name, got, want)
		}
	}
}
