package testbed

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeRecord: whatever a registry file holds, decoding never
// panics, and a record it accepts has only fields tlab writes: a tlab_
// table, a tlx veth, forwarding keys that are interface names (no "/",
// no "..") with values 0 or 1, a clean temp directory named as tlab names
// them, and PIDs above 1. What it accepts decodes again to itself.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"id":"20250101T000000-0123abcd","owner":{"pid":1234,"start":5},"started":"2025-01-01T00:00:00Z","temp_dir":"/tmp/tlab-20250101T000000-0123abcd","children":[{"pid":99,"start":7}],"egress":{"netns":4026531840,"nft_table":"tlab_0123abcd","veth":"tlx0123abcd","forwarding":{"eth0":"0"}}}`))
	f.Add([]byte(`{"id":"adhoc-20250101T000000-0123abcd","owner":{"pid":1234,"start":5},"started":"2025-01-01T00:00:00Z","temp_dir":"/tmp/tlab-adhoc-20250101T000000-0123abcd","kind":"dir","children":null}`))
	f.Add([]byte(`{"id":"x","owner":{"pid":1},"egress":{"nft_table":"filter; flush ruleset","forwarding":{"../../../../etc":"1","all":"1"}}}`))
	f.Add([]byte(`{"id":"20250101T000000-0123abcd","owner":{"pid":2},"temp_dir":"/tmp/../etc/tlab-20250101T000000-0123abcd"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			return
		}
		if r.Owner.PID <= 1 {
			t.Errorf("owner pid %d accepted", r.Owner.PID)
		}
		for _, c := range r.Children {
			if c.PID <= 1 {
				t.Errorf("child pid %d accepted", c.PID)
			}
		}
		if r.TempDir != "" && (filepath.Clean(r.TempDir) != r.TempDir || !filepath.IsAbs(r.TempDir) || !strings.HasPrefix(filepath.Base(r.TempDir), "tlab-")) {
			t.Errorf("temp dir %q accepted", r.TempDir)
		}
		if e := r.Egress; e != nil {
			if !strings.HasPrefix(e.Table, "tlab_") || len(e.Table) != len("tlab_")+8 || strings.ContainsAny(e.Table, " ;\n\"") {
				t.Errorf("table %q accepted", e.Table)
			}
			for k, v := range e.Forwarding {
				if strings.Contains(k, "/") || k == ".." || k == "." || k == "all" || k == "" || len(k) > 15 {
					t.Errorf("forwarding key %q accepted", k)
				}
				if v != "0" && v != "1" {
					t.Errorf("forwarding value %q accepted", v)
				}
			}
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := decodeRecord(again)
		if err != nil {
			t.Fatalf("an accepted record does not decode again: %v\n%s", err, again)
		}
		if r2.ID != r.ID || r2.TempDir != r.TempDir || len(r2.Children) != len(r.Children) {
			t.Errorf("decoded again, the record changed: %+v, %+v", r, r2)
		}
	})
}
