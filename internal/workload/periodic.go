package workload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

func init() {
	Register(Type{
		Name:    "periodic",
		Summary: "study A's cloud control loop: a request every interval, open loop, answered by a response",
		Params: []Param{
			{"interval", "25ms", "time between requests (on schedule whether or not earlier responses arrived)"},
			{"payload", "256", "request payload bytes"},
			{"response_size", "= payload", "response payload bytes"},
			{"timeout", "10s", "bound on one exchange; a request not answered by then is an error"},
		},
		Decode: decodePeriodic,
	})
}

// periodicParams are the scenario's workload section for periodic.
type periodicParams struct {
	Interval     units.Duration `yaml:"interval"`
	Payload      units.Size     `yaml:"payload"`
	ResponseSize *units.Size    `yaml:"response_size"`
	Timeout      units.Duration `yaml:"timeout"`
}

// minInterval is the shortest interval the scheduler keeps: it wakes on
// clock_nanosleep with ~0.1 ms of lateness, so a shorter period would be
// a burst, not a schedule.
const minInterval = time.Millisecond

func decodePeriodic(file string, node *yaml.Node, c Common) (Workload, error) {
	prm := periodicParams{Interval: units.Duration(25 * time.Millisecond), Payload: 256, Timeout: units.Duration(10 * time.Second)}
	if err := strictyaml.Decode(file, node, &prm); err != nil {
		return nil, err
	}
	p := Periodic{Interval: prm.Interval.D(), ReqSize: int(prm.Payload), RespSize: int(prm.Payload),
		Duration: c.Duration, Count: c.Count, Warmup: c.Warmup, Timeout: prm.Timeout.D()}
	if prm.ResponseSize != nil {
		p.RespSize = int(*prm.ResponseSize)
	}
	if p.Count > 0 {
		p.Duration = 0
	}
	switch {
	case p.Interval < minInterval:
		return nil, strictyaml.ErrorAt(file, node, "interval", "workload.interval %v: the scheduler keeps intervals of %v or more", p.Interval, minInterval)
	case p.ReqSize < 0 || p.ReqSize > proto.MaxMessage:
		return nil, strictyaml.ErrorAt(file, node, "payload", "workload.payload %d B: want 0 to %d B (64 MiB, the framing's limit)", p.ReqSize, proto.MaxMessage)
	case p.RespSize < 0 || p.RespSize > proto.MaxMessage:
		return nil, strictyaml.ErrorAt(file, node, "response_size", "workload.response_size %d B: want 0 to %d B (64 MiB, the framing's limit)", p.RespSize, proto.MaxMessage)
	case p.Timeout <= 0:
		return nil, strictyaml.ErrorAt(file, node, "timeout", "workload.timeout must be positive")
	}
	if err := p.Validate(); err != nil {
		return nil, strictyaml.ErrorAt(file, node, "", "workload: %v", err)
	}
	return p, nil
}

// Periodic is study A's cloud-control pattern: every Interval the client
// sends a request of ReqSize bytes and the server answers with RespSize
// bytes, on schedule whether or not earlier responses have arrived (open
// loop). A protocol that multiplexes gets every request at its time; one
// that cannot sends a due request when the previous exchange ends, and the
// lateness is recorded.
type Periodic struct {
	Interval time.Duration
	ReqSize  int
	RespSize int
	// Duration bounds the schedule (after the warm-up); Count, when set,
	// bounds it by number of requests instead.
	Duration time.Duration
	Count    int
	// Warmup requests are sent and recorded, marked, and kept out of the
	// statistics.
	Warmup time.Duration
	// Timeout bounds one exchange; default 10 s.
	Timeout time.Duration
	// OnWarmupEnd, when set, is called half an interval before the first
	// measured request is due (never when there is no warm-up), so that
	// counters can be read between the two phases.
	OnWarmupEnd func()
}

// Info describes the configured pattern.
func (p Periodic) Info() Info {
	return Info{
		Type:    "periodic",
		Planned: p.Warmup + time.Duration(p.slots()-int(p.Warmup/p.Interval))*p.Interval,
		Records: p.slots(),
		Key: []results.Field{
			{Name: "interval_ms", Value: ms(p.Interval)},
			{Name: "req_size", Value: float64(p.ReqSize)},
			{Name: "resp_size", Value: float64(p.RespSize)},
		},
		Roles: ClientServerRoles,
		Metrics: []string{"requests", "errors", "unsent", "failed_pct", "delay_p5_ms", "delay_p25_ms", "delay_p50_ms", "delay_p75_ms", "delay_p95_ms", "delay_p99_ms",
			"delay_p50_ci_low_ms", "delay_p50_ci_high_ms", "delay_p95_ci_low_ms", "delay_p95_ci_high_ms", "sched_delay_p50_ms", "sched_delay_p95_ms", "sched_delay_p99_ms", "delay_mean_ms", "delay_std_ms", "jitter_ms", "jitter_pct", "bytes_per_request", "bytes_per_response", "conns_per_1000",
			"deadline_miss_pct", "late_sends", "lateness_p99_ms", "outliers_removed"},
		Table: []string{"requests", "failed_pct", "delay_p5_ms", "delay_p50_ms", "delay_p95_ms", "delay_p99_ms", "sched_delay_p99_ms", "deadline_miss_pct", "delay_mean_ms", "jitter_pct",
			"bytes_per_request", "bytes_per_response", "conns_per_1000", "late_sends", "errors", "unsent"},
		Columns:  []string{"sched_delay_ms"},
		Plots:    []string{"delay_box", "jitter_bars", "bytes_bars", "bytes_resp_bars", "conns_heatmap", "delay_cdf", "delay_ccdf", "timeseries"},
		Describe: fmt.Sprintf("Periodic requests every %v, %d B up, %d B down", p.Interval, p.ReqSize, p.RespSize),
		Offered: Offered{UpBps: float64(p.ReqSize) * 8 / p.Interval.Seconds(), DownBps: float64(p.RespSize) * 8 / p.Interval.Seconds(),
			UpParam: "payload", DownParam: "response_size", UpMessage: p.ReqSize, DownMessage: p.RespSize},
		Floor: reqRespFloor(ms(p.Interval)),
	}
}

// Run runs the pattern on a client-server cell. Without a warm-up the
// measured window starts before the client connects, so that it holds the
// handshakes; with one, half an interval before the first measured request.
func (p Periodic) Run(ctx context.Context, env *Env) error {
	stopServer, err := StartServer(env)
	if err != nil {
		return err
	}
	defer stopServer()
	var client proto.Client
	var connsAtStart atomic.Int64
	if p.Warmup < p.Interval {
		env.StartWindow()
	}
	if client, err = NewClient(ctx, env); err != nil {
		return err
	}
	defer client.Close()
	p.OnWarmupEnd = func() {
		connsAtStart.Store(int64(client.Connections()))
		env.StartWindow()
	}
	// The highest connection the warm-up's requests used: connections up
	// to it that carry a measured request are sessions the window used
	// without opening them (study A counts every session used).
	var warmupConnMax atomic.Int64
	emit := func(r results.Record) {
		for id := int64(r.ConnID); r.Warmup; {
			cur := warmupConnMax.Load()
			if id <= cur || warmupConnMax.CompareAndSwap(cur, id) {
				break
			}
		}
		env.Emit(r)
	}
	err = p.Drive(ctx, client, emit)
	env.Note("conns_opened", float64(int64(client.Connections())-connsAtStart.Load()))
	if p.Warmup >= p.Interval {
		env.Note("warmup_conn_id_max", float64(warmupConnMax.Load()))
	}
	return err
}

// Validate reports impossible parameters.
func (p Periodic) Validate() error {
	switch {
	case p.Interval <= 0:
		return errors.New("interval must be positive")
	case p.ReqSize < 0 || p.RespSize < 0:
		return errors.New("sizes must not be negative")
	case p.Duration <= 0 && p.Count <= 0:
		return errors.New("give a duration or a count")
	case p.Warmup < 0:
		return errors.New("warm-up must not be negative")
	}
	return nil
}

// slots returns how many requests the schedule holds, warm-up included.
func (p Periodic) slots() int {
	warm := int(p.Warmup / p.Interval)
	if p.Count > 0 {
		return warm + p.Count
	}
	return warm + int(p.Duration/p.Interval)
}

// Drive executes the schedule with client c and emits a record per
// request, in completion order. It returns when every request has completed or timed out. A
// protocol that cannot multiplex gets until one interval after the last
// slot; requests it had not sent by then are emitted with ErrUnsent.
func (p Periodic) Drive(ctx context.Context, c proto.Client, emit func(results.Record)) error {
	if err := p.Validate(); err != nil {
		return err
	}
	timeout := p.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	n := p.slots()
	warm := int(p.Warmup / p.Interval)
	clock, err := newClock()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	emitLocked := func(r results.Record) { mu.Lock(); emit(r); mu.Unlock() }

	exchange := func(seq int, scheduled time.Duration) {
		sent := clock.since()
		ectx, cancel := context.WithTimeout(ctx, timeout)
		ex, err := c.Exchange(ectx, p.ReqSize, p.RespSize)
		cancel()
		r := clock.record(seq, sent, p.ReqSize, ex, err)
		r.Warmup, r.ScheduledMs, r.LatenessMs = seq < warm, ms(scheduled), ms(max(sent-scheduled, 0))
		// Its column sched_delay_ms, what the application waited since
		// the request was due, follows from done_ms and scheduled_ms:
		// records.csv derives it as it is written, so that no record
		// carries a map for it.
		emitLocked(r)
	}

	var wg sync.WaitGroup
	var serial chan int
	var ended atomic.Bool
	if !c.Multiplexes() {
		// One sender works through due requests in order. Requests
		// still waiting when the schedule has ended are not sent.
		serial = make(chan int, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range serial {
				scheduled := time.Duration(seq) * p.Interval
				if ended.Load() || ctx.Err() != nil {
					emitLocked(results.Record{Seq: seq, Warmup: seq < warm, ScheduledMs: ms(scheduled), ReqBytes: p.ReqSize, Error: ErrUnsent.Error(), Unsent: true})
					continue
				}
				exchange(seq, scheduled)
			}
		}()
	}
	// The schedule runs on a locked thread sleeping with clock_nanosleep:
	// Go's timers are ~1 ms coarse on a VM, too coarse for a 5 ms period.
	schedErr := clock.run(func() error {
		for seq := 0; seq < n; seq++ {
			if seq == warm && seq > 0 && p.OnWarmupEnd != nil {
				// Halfway between the last warm-up request and the
				// first measured one, so the hook never delays a send.
				if err := clock.sleepUntil(ctx, time.Duration(seq)*p.Interval-p.Interval/2); err != nil {
					return err
				}
				p.OnWarmupEnd()
			}
			if err := clock.sleepUntil(ctx, time.Duration(seq)*p.Interval); err != nil {
				return err
			}
			if serial != nil {
				serial <- seq
				continue
			}
			wg.Add(1)
			go func(seq int) {
				defer wg.Done()
				exchange(seq, time.Duration(seq)*p.Interval)
			}(seq)
		}
		// The schedule ends when the next request would have been due.
		err := clock.sleepUntil(ctx, time.Duration(n)*p.Interval)
		ended.Store(true)
		return err
	})
	ended.Store(true)
	if serial != nil {
		close(serial)
	}
	wg.Wait()
	if schedErr != nil && !errors.Is(schedErr, context.Canceled) {
		return schedErr
	}
	return ctx.Err()
}

// ErrUnsent marks a request that a protocol unable to multiplex never got
// to send before the schedule ended.
var ErrUnsent = errors.New("not sent: the schedule ended while it waited for the previous exchange")
