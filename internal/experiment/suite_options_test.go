package experiment

import (
	"encoding/json"
	"errors"
	"testing"
	"tlab/internal/cellrun"

	"tlab/internal/advise"
)

// TestSuiteKeepsItsOptions: a suite begun with a quality rule and
// requirements keeps them in its record, so that a part that starts only
// after a resume given neither follows them too (it ran with the default
// rule, re-running cells the suite had said not to); options given on
// the resume replace them.
func TestSuiteKeepsItsOptions(t *testing.T) {
	req, err := advise.ParseAll([]string{"delay_p99_ms<=20"})
	if err != nil {
		t.Fatal(err)
	}
	var begun SuiteRecord
	if q, r, err := begun.Options("off", req); err != nil || q != "off" || len(r) != 1 {
		t.Fatalf("first run: %q %v %v", q, r, err)
	}
	// What is written to suite.json and read back by the resume.
	b, _ := json.Marshal(begun)
	var resumed SuiteRecord
	if err := json.Unmarshal(b, &resumed); err != nil {
		t.Fatal(err)
	}
	q, r, err := resumed.Options("", nil)
	if err != nil || q != "off" || len(r) != 1 || r[0].String() != req[0].String() {
		t.Errorf("a resume given nothing: quality %q, requirements %v, %v; want off and %v", q, r, err, req)
	}
	if q, r, _ := resumed.Options("strict", nil); q != "strict" || len(r) != 1 {
		t.Errorf("a resume given --quality strict: %q %v", q, r)
	}
	broken := SuiteRecord{Requirements: []string{"no_such_metric<=1"}}
	if _, _, err := broken.Options("", nil); !errors.Is(err, cellrun.ErrInput) {
		t.Errorf("an edited suite.json with a bad requirement: %v", err)
	}
}
