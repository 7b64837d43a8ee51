package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"tlab/internal/proto"
)

// Bulk is a bulk download, the pattern of study C: the client asks on each
// of Streams streams at once for Bytes bytes, and reads each as fast as it
// arrives. A record per stream says when its last byte arrived; DelayMs is
// the stream's completion time and RespBytes*8/DelayMs its goodput.
//
// Streams share one connection, so they need a protocol that multiplexes
// (quic-streams, h2, h3); a protocol that cannot carries one stream.
type Bulk struct {
	Streams int
	Bytes   int
	// ReqSize is the request's payload (0: the request is a header only).
	ReqSize int
	// Timeout bounds the whole transfer; default 5 minutes.
	Timeout time.Duration
	// OnStart, when set, is called just before the requests are sent, so
	// that counters can be read at the transfer's start.
	OnStart func()
}

// Validate reports impossible parameters.
func (b Bulk) Validate() error {
	switch {
	case b.Streams < 1:
		return errors.New("at least one stream")
	case b.Bytes < 1:
		return errors.New("bytes per stream must be positive")
	case b.ReqSize < 0:
		return errors.New("request size must not be negative")
	}
	return nil
}

// Run sends the requests together and emits each stream's record when it
// completes. It returns the first stream's error, if any, after all have
// ended.
func (b Bulk) Run(ctx context.Context, c proto.Client, emit func(Record)) error {
	if err := b.Validate(); err != nil {
		return err
	}
	if b.Streams > 1 && !c.Multiplexes() {
		return fmt.Errorf("bulk: %d streams need a protocol that multiplexes", b.Streams)
	}
	timeout := b.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	clock, err := newClock()
	if err != nil {
		return err
	}
	if b.OnStart != nil {
		b.OnStart()
	}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for i := range b.Streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := clock.since()
			ex, err := c.Exchange(ctx, b.ReqSize, b.Bytes)
			if err == nil && ex.RespBytes != b.Bytes {
				err = fmt.Errorf("stream %d: received %d of %d bytes", i, ex.RespBytes, b.Bytes)
			}
			r := clock.record(i, sent, b.ReqSize, ex, err)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("bulk stream %d: %w", i, err)
			}
			emit(r)
		}()
	}
	wg.Wait()
	return firstErr
}
