package workload

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/dns"
	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

// Upload is study B's pattern: a fog node uploads one body per request,
// each request on a fresh connection as one curl invocation makes it (name
// lookup, TCP and TLS or QUIC handshakes, the POST, the response, close),
// back to back or paced by Interval. Every phase is timed as curl's -w
// variables define it.
type Upload struct {
	Size     int
	RespSize int
	// Count bounds the requests; otherwise Duration does.
	Count    int
	Duration time.Duration
	// Interval paces the requests (0: back to back).
	Interval time.Duration
	// Resolve is "dns" (a name server in the server's host, reached over
	// the emulated link for every upload), "cached" (reached once, before
	// the measured uploads; then answered from memory) or "static" (the
	// address is known: no lookup).
	Resolve string
	Timeout time.Duration
}

// The phases, as record columns (milliseconds from the request's start)
// and in curl's order.
var uploadPhases = []string{"time_namelookup_ms", "time_connect_ms", "time_appconnect_ms", "time_pretransfer_ms", "time_starttransfer_ms", "time_total_ms"}

func init() {
	Register(Type{
		Name:    "upload",
		Summary: "study B's IoT upload: a POST of size bytes per request, each on a fresh connection (as one curl invocation), every phase timed as curl's -w variables",
		Params: []Param{
			{"size", "30", "body bytes per request (the study: 30 B and 3.5 KB)"},
			{"response_size", "2", "response body bytes"},
			{"interval", "0s", "time between request starts (0: back to back)"},
			{"resolve", "dns", "dns: look the server's name up in a name server on the server's host, across the link, for every upload; cached: once across the link before the measured uploads, then from the cache (study B: \"the DNS query response is cached\"); static: no lookup"},
			{"timeout", "30s", "bound on one request; a request not done by then is an error with the phase it reached"},
		},
		Decode: decodeUpload,
	})
	for _, m := range []metrics.Metric{
		{Name: "response_time_mean_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "RT MEAN ms", Precision: 2,
			Definition: "Study B's response time, `time_starttransfer − time_namelookup`: mean after removing values beyond 3 scaled MADs from the median (the study's rule).",
			Compute:    func(in *metrics.Input) float64 { return meanStd(extra(in, "response_time_ms"), false) }},
		{Name: "response_time_std_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "RT STD ms", Precision: 2,
			Definition: "Standard deviation (n−1) of the response time after the 3-scaled-MAD rule.",
			Compute:    func(in *metrics.Input) float64 { return meanStd(extra(in, "response_time_ms"), true) }},
		{Name: "response_time_p50_ms", Kind: metrics.Measured, Unit: "ms", Header: "RT P50 ms", Precision: 2,
			Definition: "Median response time over every upload, type 7 (one that never completed counts as beyond any bound).",
			Compute: func(in *metrics.Input) float64 {
				return metrics.QuantileCounting(extra(in, "response_time_ms"), in.Unfinished(), 0.5)
			}},
		{Name: "e2e_mean_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "E2E MEAN ms", Precision: 2,
			Definition: "Study B's end-to-end delay, `time_total − time_namelookup`: mean after the 3-scaled-MAD rule.",
			Compute:    func(in *metrics.Input) float64 { return meanStd(extra(in, "e2e_ms"), false) }},
		{Name: "e2e_std_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "E2E STD ms", Precision: 2,
			Definition: "Standard deviation (n−1) of the end-to-end delay after the 3-scaled-MAD rule.",
			Compute:    func(in *metrics.Input) float64 { return meanStd(extra(in, "e2e_ms"), true) }},
		{Name: "e2e_p50_ms", Kind: metrics.Measured, Unit: "ms", Header: "E2E P50 ms", Precision: 2,
			Definition: "Median end-to-end delay over every upload (type 7, no outlier rule; one that never completed counts as beyond any bound).",
			Compute: func(in *metrics.Input) float64 {
				return metrics.QuantileCounting(extra(in, "e2e_ms"), in.Unfinished(), 0.5)
			}},
		{Name: "e2e_p95_ms", Kind: metrics.Measured, Unit: "ms", Header: "E2E P95 ms", Precision: 2,
			Definition: "95th percentile of the end-to-end delay over every upload (type 7, no outlier rule; one that never completed counts as beyond any bound).",
			Compute: func(in *metrics.Input) float64 {
				return metrics.QuantileCounting(extra(in, "e2e_ms"), in.Unfinished(), 0.95)
			}},
		{Name: "e2e_outliers", Kind: metrics.Measured, Header: "E2E OUTLIERS",
			Definition: "End-to-end delays the 3-scaled-MAD rule left out of `e2e_mean_ms` and `e2e_std_ms`.",
			Compute: func(in *metrics.Input) float64 {
				_, removed := metrics.RemoveOutliers(extra(in, "e2e_ms"), 3)
				return float64(removed)
			}},
	} {
		metrics.Register(m)
	}
	for _, ph := range uploadPhases {
		ph := ph
		name := ph[:len(ph)-len("_ms")] + "_mean_ms"
		header := strings.ToUpper(strings.TrimPrefix(ph[:len(ph)-len("_ms")], "time_")) + " ms"
		metrics.Register(metrics.Metric{Name: name, Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Precision: 2, Header: header,
			Definition: fmt.Sprintf("Mean of curl's `%s` over the requests that completed: from the request's start to that phase (upload).", ph[:len(ph)-len("_ms")]),
			Compute:    func(in *metrics.Input) float64 { return metrics.Describe(extra(in, ph)).Mean }})
	}
}

// extra returns a record column's values over the completed records.
func extra(in *metrics.Input, name string) []float64 {
	var out []float64
	for _, r := range in.Records {
		if v, ok := r.Extra[name]; ok && r.OK() && !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// meanStd is the mean (or the standard deviation) after study B's rule.
func meanStd(v []float64, std bool) float64 {
	kept, _ := metrics.RemoveOutliers(v, 3)
	d := metrics.Describe(kept)
	if std {
		return d.Std
	}
	return d.Mean
}

type uploadParams struct {
	Size         units.Size     `yaml:"size"`
	ResponseSize units.Size     `yaml:"response_size"`
	Interval     units.Duration `yaml:"interval"`
	Resolve      string         `yaml:"resolve"`
	Timeout      units.Duration `yaml:"timeout"`
}

func decodeUpload(file string, node *yaml.Node, c Common) (Workload, error) {
	prm := uploadParams{Size: 30, ResponseSize: 2, Resolve: "dns", Timeout: units.Duration(30 * time.Second)}
	if err := strictyaml.Decode(file, node, &prm); err != nil {
		return nil, err
	}
	u := Upload{Size: int(prm.Size), RespSize: int(prm.ResponseSize), Count: c.Count, Duration: c.Duration,
		Interval: prm.Interval.D(), Resolve: prm.Resolve, Timeout: prm.Timeout.D()}
	switch {
	case u.Size < 0 || u.Size > proto.MaxMessage:
		return nil, strictyaml.ErrorAt(file, node, "size", "workload.size %d B: want 0 to %d B", u.Size, proto.MaxMessage)
	case u.RespSize < 0 || u.RespSize > proto.MaxMessage:
		return nil, strictyaml.ErrorAt(file, node, "response_size", "workload.response_size %d B: want 0 to %d B", u.RespSize, proto.MaxMessage)
	case u.Resolve != "dns" && u.Resolve != "cached" && u.Resolve != "static":
		return nil, strictyaml.ErrorAt(file, node, "resolve", "workload.resolve %q: want dns, cached or static", u.Resolve)
	case u.Timeout <= 0:
		return nil, strictyaml.ErrorAt(file, node, "timeout", "workload.timeout must be positive")
	case u.Count <= 0 && u.Duration <= 0:
		return nil, strictyaml.ErrorAt(file, node, "", "upload: give count (requests per cell) or duration")
	}
	return u, nil
}

// Info describes the configured uploads.
func (u Upload) Info() Info {
	planned := u.Duration
	records := 0
	if u.Count > 0 {
		records = u.Count
		// A fresh connection costs a few round trips, about 100 ms on
		// the studies' networks; on a lossy link its retransmission
		// timeouts (TCP's first is 1 s) come on top: Setups and
		// Exchanges below.
		planned = time.Duration(u.Count) * max(u.Interval, 100*time.Millisecond)
	} else if u.Interval > 0 {
		records = int(u.Duration / u.Interval)
	}
	return Info{
		Type:    "upload",
		Planned: planned,
		Records: records,
		// Each upload waits for its connection and its answer before
		// the next starts (back to back, or late behind its interval).
		Setups:    records,
		Exchanges: records,
		Key: []results.Field{
			{Name: "upload_size", Value: float64(u.Size)},
		},
		Roles: ClientServerRoles,
		Needs: proto.CapFetch,
		Metrics: []string{"requests", "errors", "failed_pct", "response_time_mean_ms", "response_time_std_ms", "response_time_p50_ms",
			"e2e_mean_ms", "e2e_std_ms", "e2e_p50_ms", "e2e_p95_ms", "delay_p50_ci_low_ms", "delay_p50_ci_high_ms", "delay_p95_ci_low_ms", "delay_p95_ci_high_ms", "e2e_outliers",
			"time_namelookup_mean_ms", "time_connect_mean_ms", "time_appconnect_mean_ms", "time_pretransfer_mean_ms", "time_starttransfer_mean_ms", "time_total_mean_ms",
			"bytes_per_request"},
		Table:    []string{"requests", "errors", "response_time_mean_ms", "response_time_std_ms", "e2e_mean_ms", "e2e_std_ms", "e2e_p50_ms", "e2e_p95_ms", "time_appconnect_mean_ms", "bytes_per_request"},
		Columns:  append(slices.Clone(uploadPhases), "response_time_ms", "e2e_ms"),
		Plots:    []string{"rt_e2e_bars", "e2e_hist", "delay_cdf", "delay_ccdf"},
		Describe: fmt.Sprintf("Uploads of %d B, each on a fresh connection (name lookup: %s); delay = end-to-end (total − namelookup)", u.Size, u.Resolve),
	}
}

// Run makes the uploads on a client-server cell: a name server on the
// server's host when Resolve is dns, then one request at a time.
func (u Upload) Run(ctx context.Context, env *Env) error {
	f, ok := proto.As[proto.Fetcher](env.Protocol)
	if !ok {
		return fmt.Errorf("upload: %w", proto.Require(env.Protocol.Name, proto.CapFetch))
	}
	stop, err := StartServer(env)
	if err != nil {
		return err
	}
	defer stop()
	serverIP, err := env.Hosts.Addr("client", "server")
	if err != nil {
		return err
	}
	client := env.Hosts.Net("client")
	target := u.Target(client, serverIP)
	target.Port = env.Port(target.Port)
	if u.Resolve == "dns" || u.Resolve == "cached" {
		names, err := serveNames(env, "server", serverIP)
		if err != nil {
			return err
		}
		defer names.Close()
	}
	if u.Resolve == "cached" {
		ip, err := primeNameCache(ctx, target)
		if err != nil {
			env.Fail(err.Error())
			return nil
		}
		target.Resolve = func(context.Context, string) (net.IP, error) { return ip, nil }
	}
	env.StartWindow()
	clock, err := newClock()
	if err != nil {
		return err
	}
	end := clock.since() + u.Duration
	for i := 0; u.Count > 0 && i < u.Count || u.Count <= 0 && clock.since() < end; i++ {
		if u.Interval > 0 {
			if err := sleepCtx(ctx, time.Duration(i)*u.Interval-clock.since()); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sent := clock.since()
		rctx, cancel := context.WithTimeout(ctx, u.Timeout)
		ph, ferr := f.Fetch(rctx, client, target, env.Settings, u.Size, u.RespSize)
		cancel()
		r := uploadRecord(i, sent, clock.since(), u.Size, ph, ferr)
		r.SentUnixNs = clock.unixNs(sent)
		env.Emit(r)
	}
	env.Note("conns_opened", 0)
	return ctx.Err()
}

// primeNameCache looks the server's name up across the link before the
// measured uploads, as a host whose resolver caches the answer did once:
// a few attempts, since the link may lose the query.
func primeNameCache(ctx context.Context, t proto.Target) (net.IP, error) {
	const attempts = 5
	var err error
	for range attempts {
		var ip net.IP
		if ip, err = t.Resolve(ctx, t.Host); err == nil {
			return ip, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("priming the name cache: %d lookups of %s failed, the last: %w", attempts, t.Host, err)
}

// Target is where an upload goes: the server by name, looked up in the
// server's name server across the link (for every upload, or once with
// resolve cached), or by address.
func (u Upload) Target(client proto.Net, serverIP net.IP) proto.Target {
	t := proto.Target{Host: serverIP.String(), Port: ServerPort}
	if u.Resolve == "dns" || u.Resolve == "cached" {
		t.Host = proto.ServerName
		t.Resolve = func(ctx context.Context, host string) (net.IP, error) {
			return dns.LookupA(ctx, client, serverIP, host)
		}
	}
	return t
}

// uploadRecord turns one request's phases into a record: the phases as
// curl reports them, the response time and end-to-end delay as study B
// defines them, and for a failure the error with the phase it reached.
func uploadRecord(seq int, sent, done time.Duration, size int, ph proto.Phases, err error) results.Record {
	r := results.Record{Seq: seq, SentMs: ms(sent), ReqBytes: size, RespBytes: ph.RespBytes, ConnID: seq + 1, NewConn: true, Extra: map[string]float64{}}
	for i, d := range []time.Duration{ph.NameLookup, ph.Connect, ph.AppConnect, ph.PreTransfer, ph.StartTransfer, ph.Total} {
		if d > 0 {
			r.Extra[uploadPhases[i]] = ms(d)
		}
	}
	if err != nil {
		reached := ph.Reached
		if reached == "" {
			reached = "start"
		}
		r.Error = fmt.Sprintf("reached %s: %v", reached, err)
		return r
	}
	r.DoneMs = ms(done)
	r.DelayMs = ms(ph.Total - ph.NameLookup)
	r.FirstByteMs = ms(ph.StartTransfer - ph.NameLookup)
	if ph.Connect > 0 {
		r.ConnectMs = ms(ph.Connect - ph.NameLookup)
	}
	if ph.AppConnect > 0 {
		// TLS after TCP; for QUIC (whose connect is its socket) the
		// whole handshake.
		r.HandshakeMs = ms(ph.AppConnect - max(ph.Connect, ph.NameLookup))
	}
	r.Extra["response_time_ms"] = r.FirstByteMs
	r.Extra["e2e_ms"] = r.DelayMs
	return r
}

// sleepCtx sleeps for d (nothing when d <= 0) unless ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
