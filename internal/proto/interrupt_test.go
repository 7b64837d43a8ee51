package proto

import (
	"context"
	"sync"
	"testing"
	"time"
)

// heldDeadliner records every deadline set on it; setting the interrupt's
// past deadline (time.Unix(1, 0)) signals entered and then waits for
// release, as a goroutine the scheduler has not yet run to completion.
type heldDeadliner struct {
	mu       sync.Mutex
	set      []time.Time
	entered  chan struct{}
	release  chan struct{}
	finished chan struct{}
}

func (h *heldDeadliner) SetDeadline(t time.Time) error {
	if t.Equal(time.Unix(1, 0)) {
		close(h.entered)
		<-h.release
		defer close(h.finished)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.set = append(h.set, t)
	return nil
}

// TestInterruptEndsBeforeItsWatchDoes: a stream's exchange sets its
// deadline, watches its context, and on return ends the watch and clears
// the deadline; the next exchange sets its own. If the context ended and
// the interrupt (the past deadline) had started but not finished when the
// watch ended, the interrupt must be over before stop returns, so that
// the deadline set after stop is the one that stays. Otherwise the past
// deadline lands after it and the next exchange fails at once with an i/o
// timeout (seen in TestStreamDropsTheLateResponseOfAFailedExchange under
// the race detector).
func TestInterruptEndsBeforeItsWatchDoes(t *testing.T) {
	h := &heldDeadliner{entered: make(chan struct{}), release: make(chan struct{}), finished: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	stop := InterruptOnCancel(ctx, h)
	cancel()
	<-h.entered // the interrupt has started and is held inside SetDeadline
	next := time.Unix(2_000_000_000, 0)
	stopped := make(chan bool)
	go func() {
		kept := stop()
		h.SetDeadline(next) // what the next exchange does after the watch
		stopped <- kept
	}()
	select {
	case <-stopped:
		t.Error("stop returned while the interrupt it watched was still running")
		close(h.release)
	case <-time.After(200 * time.Millisecond):
		close(h.release)
		if kept := <-stopped; kept {
			t.Error("stop said it kept an interrupt that ran")
		}
	}
	<-h.finished
	h.mu.Lock()
	defer h.mu.Unlock()
	if want := []time.Time{time.Unix(1, 0), next}; len(h.set) != 2 || !h.set[0].Equal(want[0]) || !h.set[1].Equal(want[1]) {
		t.Errorf("deadlines set in the order %v, want the interrupt's then the next exchange's %v", h.set, want)
	}
	if stop() {
		t.Error("a second stop changed its answer")
	}
}

// TestInterruptNotNeededIsKeptFromHappening: a watch ended before its
// context does sets no deadline, and says so.
func TestInterruptNotNeededIsKeptFromHappening(t *testing.T) {
	h := &heldDeadliner{entered: make(chan struct{}), release: make(chan struct{}), finished: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	stop := InterruptOnCancel(ctx, h)
	if !stop() {
		t.Error("stop before the context ended did not keep the interrupt from happening")
	}
	if !stop() {
		t.Error("a second stop changed its answer")
	}
	cancel()
	time.Sleep(10 * time.Millisecond) // an AfterFunc not stopped would run now
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.set) != 0 {
		t.Errorf("deadlines set after the watch ended: %v", h.set)
	}
}
