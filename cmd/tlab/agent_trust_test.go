package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestAgentMaxLoadIsWholeMbit: --max-load below 1 Mbit/s (which the
// agent's whole-Mbit limit would have taken as 0, refusing every load
// without a word) is refused with the reason, as is a negative one. An
// agent that starts instead is stopped after 2 s and fails the test.
func TestAgentMaxLoadIsWholeMbit(t *testing.T) {
	for _, v := range []string{"500kbit", "1bit", "-5Mbit"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var out, errs bytes.Buffer
		code := runAgent(ctx, []string{"--max-load", v, "--listen", "127.0.0.1:0", "--state", t.TempDir(), "--no-token"}, &out, &errs)
		cancel()
		if code != exitUsage || !strings.Contains(out.String()+errs.String(), "at least 1Mbit") {
			t.Errorf("tlab agent --max-load %s: exit %d, %q; want a usage error naming 1Mbit", v, code, out.String()+errs.String())
		}
	}
}
