package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

func init() {
	Register(Type{
		Name:    "bulk",
		Summary: "study C's bulk download: streams downloads of bytes each, all at once, read as data arrive",
		Params: []Param{
			{"streams", "1", "parallel downloads on one connection (more than one needs a protocol that multiplexes)"},
			{"bytes", "1MiB", "bytes per stream"},
			{"request_size", "0", "request payload bytes"},
			{"timeout", "5m", "bound on the whole transfer"},
		},
		Decode: decodeBulk,
	})
	metrics.Register(metrics.Metric{Name: "transfer_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "TRANSFER ms", Precision: 1,
		Definition: "From sending the requests to the last byte of the last stream (bulk).",
		Compute: func(in *metrics.Input) float64 {
			last := -1.0
			for _, r := range in.Records {
				if r.OK() {
					last = max(last, r.DoneMs)
				}
			}
			if last < 0 {
				return math.NaN()
			}
			return last
		}})
	metrics.Register(metrics.Metric{Name: "goodput_mbps", Kind: metrics.Measured, OverCompleted: true, Unit: "Mbit/s", Header: "GOODPUT Mbit/s", Precision: 2,
		Definition: "Payload bytes of every completed stream × 8 over `transfer_ms` (bulk).",
		Compute: func(in *metrics.Input) float64 {
			var bytes, last float64
			for _, r := range in.Records {
				if r.OK() {
					bytes += float64(r.RespBytes)
					last = max(last, r.DoneMs)
				}
			}
			return metrics.GoodputMbps(bytes, last)
		}})
}

type bulkParams struct {
	Streams     int            `yaml:"streams"`
	Bytes       units.Size     `yaml:"bytes"`
	RequestSize units.Size     `yaml:"request_size"`
	Timeout     units.Duration `yaml:"timeout"`
}

func decodeBulk(file string, node *yaml.Node, _ Common) (Workload, error) {
	prm := bulkParams{Streams: 1, Bytes: 1 << 20, Timeout: units.Duration(5 * time.Minute)}
	if err := strictyaml.Decode(file, node, &prm); err != nil {
		return nil, err
	}
	b := Bulk{Streams: prm.Streams, Bytes: int(prm.Bytes), ReqSize: int(prm.RequestSize), Timeout: prm.Timeout.D()}
	switch {
	case b.Streams < 1 || b.Streams > 1000:
		return nil, strictyaml.ErrorAt(file, node, "streams", "workload.streams %d: want 1 to 1000", b.Streams)
	case b.Bytes < 1:
		return nil, strictyaml.ErrorAt(file, node, "bytes", "workload.bytes must be positive")
	case b.ReqSize < 0 || b.ReqSize > proto.MaxMessage:
		return nil, strictyaml.ErrorAt(file, node, "request_size", "workload.request_size %d B: want 0 to %d B", b.ReqSize, proto.MaxMessage)
	case b.Timeout <= 0:
		return nil, strictyaml.ErrorAt(file, node, "timeout", "workload.timeout must be positive")
	}
	return b, nil
}

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

// Info describes the configured transfer. Its plan is a guess: a transfer
// lasts as long as the link needs.
func (b Bulk) Info() Info {
	return Info{
		Type:    "bulk",
		Planned: 5 * time.Second,
		Records: b.Streams,
		Key: []results.Field{
			{Name: "streams", Value: float64(b.Streams)},
			{Name: "bytes_per_stream", Value: float64(b.Bytes)},
		},
		Roles:    ClientServerRoles,
		Metrics:  []string{"requests", "errors", "failed_pct", "transfer_ms", "goodput_mbps", "delay_p50_ms", "delay_p95_ms", "delay_p50_ci_low_ms", "delay_p50_ci_high_ms", "delay_p95_ci_low_ms", "delay_p95_ci_high_ms", "bytes_per_response"},
		Table:    []string{"requests", "errors", "transfer_ms", "goodput_mbps", "delay_p50_ms", "delay_p95_ms"},
		Plots:    []string{"goodput_bars", "delay_cdf", "delay_ccdf"},
		Describe: fmt.Sprintf("Bulk download: %d stream(s) of %d B at once; a record per stream, its delay the stream's completion", b.Streams, b.Bytes),
	}
}

// Run runs the transfer on a client-server cell; the measured window
// starts when the requests are sent. The client is closed before Run
// returns, which completes its qlog.
func (b Bulk) Run(ctx context.Context, env *Env) error {
	stopServer, err := StartServer(env)
	if err != nil {
		return err
	}
	defer stopServer()
	client, err := NewClient(ctx, env)
	if err != nil {
		return err
	}
	b.OnStart = env.StartWindow
	err = b.Drive(ctx, client, env.Emit)
	if cerr := client.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("client close: %w", cerr)
	}
	return err
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

// Drive sends the requests together on client c and emits each stream's
// record when it completes. It returns the first stream's error, if any,
// after all have ended.
func (b Bulk) Drive(ctx context.Context, c proto.Client, emit func(results.Record)) error {
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
