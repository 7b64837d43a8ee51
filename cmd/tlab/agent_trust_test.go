package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// TestAgentWritesThePairingBeforeItSaysItListens: a script that starts the
// controller at the agent's first line ("tlab agent listening ...") must
// find --token-file already written. The test looks for the file at the
// moment that line is written to the agent's stdout, so the order is
// checked, not a race's outcome.
func TestAgentWritesThePairingBeforeItSaysItListens(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "pairing")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &firstLineProbe{onListening: func() error {
		defer cancel() // the agent has done what this test watches
		_, err := os.Stat(tokenFile)
		return err
	}}
	var errs bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- runAgent(ctx, []string{"--listen", "127.0.0.1:0", "--state", t.TempDir(), "--token-file", tokenFile}, out, &errs)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("the agent did not say it listens within 30 s: %s", errs.String())
	}
	if !out.seen {
		t.Fatalf("the agent never printed its listening line; stdout %q, stderr %q", out.text.String(), errs.String())
	}
	if out.err != nil {
		t.Errorf("when the agent printed %q, its --token-file was not there yet: %v", "tlab agent listening", out.err)
	}
}

// firstLineProbe is an agent's stdout that calls onListening when the
// listening line is written, before the agent goes on.
type firstLineProbe struct {
	mu          sync.Mutex
	text        bytes.Buffer
	seen        bool
	err         error
	onListening func() error
}

func (p *firstLineProbe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text.Write(b)
	if !p.seen && strings.Contains(p.text.String(), "tlab agent listening") {
		p.seen = true
		p.err = p.onListening()
	}
	return len(b), nil
}
