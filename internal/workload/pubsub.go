package workload

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"tlab/internal/metrics"
	"tlab/internal/proto"
	"tlab/internal/results"
	"tlab/internal/strictyaml"
	"tlab/internal/units"
)

// PubSub is study D's industrial IoT messaging: publishers send short
// messages through a broker to a subscriber, over MQTT on TCP, TLS or QUIC.
// tlab drives both ends, so a publisher learns that the subscriber got a
// message without touching the network.
//
//   - Pattern stop-and-wait (study D's A): one connection kept open;
//     message i+1 leaves only when the subscriber has message i (and the
//     publisher's QoS flow for it is done). Δ, the completion time, runs
//     from the first publish to the last delivery.
//   - Pattern reconnect (study D's B): the publisher connects once (not
//     measured), then opens a new connection for every message; Δ+ runs
//     from the start of the new connection's set-up to the subscriber's
//     receipt, which shows TLS resumption and QUIC's 0-RTT.
//
// With several publishers (a shared-access topology's stations), every one
// runs the pattern on its own topic, but only the first one's messages are
// recorded and followed by the subscriber: the others are the contending
// traffic of the shared link, paced by a subscriber on the broker's host.
type PubSub struct {
	Pattern   string
	Messages  int
	Size      int
	QoS       byte
	Broker    string
	KeepAlive time.Duration
	Timeout   time.Duration
	// Pipeline (pattern reconnect, QoS 0) writes each PUBLISH right
	// behind its CONNECT, so that over QUIC with 0-RTT both go as early
	// data; Paho's clients wait for the CONNACK first.
	Pipeline bool
}

// Patterns of the pubsub workload.
const (
	PatternStopAndWait = "stop-and-wait"
	PatternReconnect   = "reconnect"
)

func init() {
	Register(Type{
		Name:    "pubsub",
		Summary: "study D's MQTT publisher → broker → subscriber: stop-and-wait messages on one connection, or a new connection per message",
		Params: []Param{
			{"pattern", PatternStopAndWait, "stop-and-wait (study D's pattern A: one connection, message i+1 after the subscriber got i) or reconnect (pattern B: a new connection per message)"},
			{"messages", "100 (stop-and-wait), 10 (reconnect)", "messages per cell (the recorded publisher's)"},
			{"size", "32", "message payload bytes (at least 8)"},
			{"qos", "0", "MQTT QoS of publish and subscription: 0, 1 or 2"},
			{"broker", proto.BrokerEmbedded, "embedded (mochi-mqtt in tlab) or mosquitto (Debian's, started in the broker's host; mqtt-tcp and mqtt-tls)"},
			{"keepalive", "60s", "MQTT keep-alive"},
			{"timeout", "30s", "how long a message may take to reach the subscriber before the cell is failed"},
			{"pipeline", "false", "reconnect, QoS 0, MQTT 3.1.1: write each PUBLISH right behind its CONNECT, before the CONNACK (MQTT allows it; Paho does not do it), so that with 0-RTT both go as QUIC early data"},
		},
		Decode: decodePubSub,
	})
	for _, m := range []metrics.Metric{
		{Name: "messages", Kind: metrics.Measured, Header: "MSGS", Definition: "Messages of the recorded publisher in the measured part of the cell.",
			Compute: func(in *metrics.Input) float64 { return float64(len(in.Records)) }},
		{Name: "messages_failed", Kind: metrics.Measured, Header: "FAILED", Definition: "Messages that did not reach the subscriber (a connection lost, a broker refusing, a timeout), or were never sent because an earlier one failed.",
			Compute: func(in *metrics.Input) float64 {
				n := 0
				for _, r := range in.Records {
					if !r.OK() {
						n++
					}
				}
				return float64(n)
			}},
		{Name: "completion_ms", Kind: metrics.Measured, OverCompleted: true, Verdict: true, Unit: "ms", Header: "Δ ms", Precision: 1,
			Definition: "Study D's Δ (pattern stop-and-wait): from the first message's publish to the last message's delivery to the subscriber; NaN when a message failed.",
			Compute:    func(in *metrics.Input) float64 { return in.Fact("completion_ms") }},
		{Name: "reconnect_ms", Kind: metrics.Measured, OverCompleted: true, Verdict: true, Unit: "ms", Header: "Δ+ ms", Precision: 1,
			Definition: "Study D's Δ+ (pattern reconnect): from the start of a new connection's set-up to the subscriber's receipt of the message it carried; the mean over the cell's reconnections.",
			Compute:    func(in *metrics.Input) float64 { return metrics.Describe(reconnects(in)).Mean }},
		{Name: "reconnect_first_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "Δ+ 1st ms", Precision: 1,
			Definition: "Study D's Δ+ as the study measured it, once per repetition: the first measured reconnection's (the second connection of the cell, the first being the unmeasured warm-up), so that boxes over repetitions are the study's; NaN when it failed.",
			Compute: func(in *metrics.Input) float64 {
				for _, r := range in.Records {
					if r.NewConn && r.ConnID >= 2 {
						if r.OK() {
							return r.DelayMs
						}
						return math.NaN()
					}
				}
				return math.NaN()
			}},
		{Name: "reconnect_p50_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "Δ+ P50 ms", Precision: 1, Definition: "Median Δ+ over the cell's reconnections.",
			Compute: func(in *metrics.Input) float64 { return metrics.QuantileOf(reconnects(in), 0.5) }},
		{Name: "reconnect_p95_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "Δ+ P95 ms", Precision: 1, Definition: "95th percentile of Δ+ over the cell's reconnections.",
			Compute: func(in *metrics.Input) float64 { return metrics.QuantileOf(reconnects(in), 0.95) }},
		{Name: "message_latency_p50_ms", Kind: metrics.Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "LAT P50 ms", Precision: 2,
			Definition: "Median publish-to-delivery latency: from the publisher's PUBLISH call to the subscriber's receipt, per message; a message that never arrived counts as beyond any bound.",
			Compute: func(in *metrics.Input) float64 {
				return metrics.QuantileCounting(extra(in, "latency_ms"), in.Unfinished(), 0.5)
			}},
		{Name: "message_latency_p95_ms", Kind: metrics.Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "LAT P95 ms", Precision: 2, Definition: "95th percentile of the publish-to-delivery latency.",
			Compute: func(in *metrics.Input) float64 {
				return metrics.QuantileCounting(extra(in, "latency_ms"), in.Unfinished(), 0.95)
			}},
		{Name: "message_latency_p99_ms", Kind: metrics.Measured, Unit: "ms", Bounds: []float64{0, math.Inf(1)}, Header: "LAT P99 ms", Precision: 2, Definition: "99th percentile of the publish-to-delivery latency.",
			Compute: func(in *metrics.Input) float64 {
				return metrics.QuantileCounting(extra(in, "latency_ms"), in.Unfinished(), 0.99)
			}},
		{Name: "message_latency_mean_ms", Kind: metrics.Measured, OverCompleted: true, Unit: "ms", Header: "LAT MEAN ms", Precision: 2, Definition: "Mean publish-to-delivery latency of the messages that arrived (`messages_failed` counts the others).",
			Compute: func(in *metrics.Input) float64 { return metrics.Describe(extra(in, "latency_ms")).Mean }},
		{Name: "used_0rtt", Kind: metrics.Measured, Unit: "fraction", Header: "0-RTT", Precision: 2,
			Definition: "Fraction of the measured new connections whose CONNECT went as QUIC 0-RTT data that the broker accepted (NaN without new connections in the window).",
			Compute: func(in *metrics.Input) float64 {
				return connFraction(in, func(r results.Record) bool { return r.EarlyData })
			}},
		{Name: "resumed", Kind: metrics.Measured, Unit: "fraction", Header: "RESUMED", Precision: 2,
			Definition: "Fraction of the measured new connections that resumed a TLS session (TLS or QUIC).",
			Compute: func(in *metrics.Input) float64 {
				return connFraction(in, func(r results.Record) bool { return r.Resumed })
			}},
		{Name: "wire_bytes_per_message", Kind: metrics.Measured, Verdict: true, Unit: "B", Header: "B/MSG", Precision: 0,
			Definition: "Bytes the recorded publisher's access link carried, both directions, Ethernet frames, over the measured window, per message (with several publishers on a shared link, everyone's bytes over the recorded publisher's messages).",
			Compute: func(in *metrics.Input) float64 {
				if len(in.Records) == 0 {
					return math.NaN()
				}
				return in.Bytes(in.Up.TxBytes+in.Down.TxBytes) / float64(len(in.Records))
			}},
		{Name: "publishers", Kind: metrics.Measured, Header: "PUBS", Definition: "Publishers running the pattern at once (the stations of a shared access); the first one is recorded.",
			Compute: func(in *metrics.Input) float64 { return in.Fact("publishers") }},
	} {
		metrics.Register(m)
	}
}

// reconnects are the Δ+ of the measured records that opened a second or
// later connection (pattern reconnect).
func reconnects(in *metrics.Input) []float64 {
	var out []float64
	for _, r := range in.Records {
		if r.OK() && r.NewConn && r.ConnID >= 2 {
			out = append(out, r.DelayMs)
		}
	}
	return out
}

func connFraction(in *metrics.Input, pred func(results.Record) bool) float64 {
	n, yes := 0, 0
	for _, r := range in.Records {
		if r.OK() && r.NewConn {
			n++
			if pred(r) {
				yes++
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return float64(yes) / float64(n)
}

type pubsubParams struct {
	Pattern   string         `yaml:"pattern"`
	Messages  int            `yaml:"messages"`
	Size      units.Size     `yaml:"size"`
	QoS       int            `yaml:"qos"`
	Broker    string         `yaml:"broker"`
	KeepAlive units.Duration `yaml:"keepalive"`
	Timeout   units.Duration `yaml:"timeout"`
	Pipeline  bool           `yaml:"pipeline"`
}

func decodePubSub(file string, node *yaml.Node, c Common) (Workload, error) {
	prm := pubsubParams{Pattern: PatternStopAndWait, Size: 32, Broker: proto.BrokerEmbedded,
		KeepAlive: units.Duration(60 * time.Second), Timeout: units.Duration(30 * time.Second)}
	if err := strictyaml.Decode(file, node, &prm); err != nil {
		return nil, err
	}
	if prm.Messages == 0 {
		prm.Messages = c.Count
	}
	if prm.Messages == 0 {
		prm.Messages = 100
		if prm.Pattern == PatternReconnect {
			prm.Messages = 10
		}
	}
	p := PubSub{Pattern: prm.Pattern, Messages: prm.Messages, Size: int(prm.Size), QoS: byte(prm.QoS), Broker: prm.Broker,
		KeepAlive: prm.KeepAlive.D(), Timeout: prm.Timeout.D(), Pipeline: prm.Pipeline}
	switch {
	case p.Pattern != PatternStopAndWait && p.Pattern != PatternReconnect:
		return nil, strictyaml.ErrorAt(file, node, "pattern", "workload.pattern %q: want %s or %s", p.Pattern, PatternStopAndWait, PatternReconnect)
	case p.Messages < 1 || p.Messages > 100_000:
		return nil, strictyaml.ErrorAt(file, node, "messages", "workload.messages %d: want 1 to 100000", p.Messages)
	case p.Size < pubsubHeader || p.Size > 256<<20:
		return nil, strictyaml.ErrorAt(file, node, "size", "workload.size %d B: want %d B to 256 MiB (MQTT's limit)", p.Size, pubsubHeader)
	case prm.QoS < 0 || prm.QoS > 2:
		return nil, strictyaml.ErrorAt(file, node, "qos", "workload.qos %d: want 0, 1 or 2", prm.QoS)
	case p.Broker != proto.BrokerEmbedded && p.Broker != proto.BrokerMosquitto:
		return nil, strictyaml.ErrorAt(file, node, "broker", "workload.broker %q: want %s or %s", p.Broker, proto.BrokerEmbedded, proto.BrokerMosquitto)
	case p.KeepAlive < time.Second || p.KeepAlive > 18*time.Hour:
		return nil, strictyaml.ErrorAt(file, node, "keepalive", "workload.keepalive %v: want 1 s to 18 h (MQTT's limit)", p.KeepAlive)
	case p.Timeout <= 0:
		return nil, strictyaml.ErrorAt(file, node, "timeout", "workload.timeout must be positive")
	case p.Pipeline && p.Pattern != PatternReconnect:
		return nil, strictyaml.ErrorAt(file, node, "pipeline", "workload.pipeline: only pattern %s opens a connection per message to pipeline", PatternReconnect)
	case p.Pipeline && p.QoS != 0:
		return nil, strictyaml.ErrorAt(file, node, "pipeline", "workload.pipeline: a pipelined PUBLISH is QoS 0 (qos is %d)", p.QoS)
	}
	return p, nil
}

// PubSubRoles are the hosts of the pubsub workload, the publisher first:
// its link is the one whose counters the metrics read.
var PubSubRoles = []string{"publisher", "broker", "subscriber"}

// Info describes the configured pattern.
func (p PubSub) Info() Info {
	// A message costs about two one-way trips; a reconnect a few round
	// trips more. 50 ms is a guess for the plan, not a limit.
	per := 50 * time.Millisecond
	if p.Pattern == PatternReconnect {
		per = 200 * time.Millisecond
	}
	// Each message waits for the one before it (stop-and-wait) or for
	// its own connection (reconnect): a closed loop that loss slows.
	setups := 0
	if p.Pattern == PatternReconnect {
		setups = p.Messages + 1
	}
	return Info{
		Type:    "pubsub",
		Planned: time.Duration(p.Messages) * per,
		// A message crosses the path one way (half the links' RTTs); a
		// reconnection first takes up to three round trips of handshakes.
		PlanFor: func(rtt time.Duration) time.Duration {
			each := rtt/2 + time.Millisecond
			if p.Pattern == PatternReconnect {
				each += 3 * rtt / 2
			}
			return time.Duration(p.Messages+1) * each
		},
		Records:   p.Messages + 1,
		Setups:    setups,
		Exchanges: p.Messages + 1,
		Key:       []results.Field{{Name: "message_bytes", Value: float64(p.Size)}, {Name: "qos", Value: float64(p.QoS)}},
		Roles:     PubSubRoles,
		Needs:     proto.CapPubSub,
		Check: func(stack *proto.Stack) error {
			ps, _ := proto.As[proto.PubSub](stack)
			return ps.CheckBroker(p.Broker)
		},
		Metrics: []string{"messages", "messages_failed", "failed_pct", "completion_ms", "reconnect_ms", "reconnect_first_ms", "reconnect_p50_ms", "reconnect_p95_ms",
			"message_latency_p50_ms", "message_latency_p95_ms", "message_latency_p99_ms", "message_latency_mean_ms",
			"delay_p50_ci_low_ms", "delay_p50_ci_high_ms", "used_0rtt", "resumed", "wire_bytes_per_message", "publishers"},
		Undefined: p.undefined(),
		Floor:     pubsubFloor,
		Table:     pubsubTable,
		Columns:   []string{"latency_ms", "session_ms"},
		Plots:     pubsubPlots,
		Describe:  p.describe(),
	}
}

// pubsubTable and pubsubPlots do not depend on the pattern, which a
// scenario may sweep: a column or figure a row cannot fill is NA or left
// out.
var (
	pubsubTable = []string{"messages", "messages_failed", "completion_ms", "reconnect_ms", "message_latency_p50_ms", "message_latency_p95_ms", "used_0rtt", "resumed", "wire_bytes_per_message"}
	pubsubPlots = []string{"completion_box", "xi", "xi_box", "reconnect_by_network", "reconnect_box", "delay_cdf", "delay_ccdf"}
)

// undefined are the metrics the pattern cannot produce: Δ is pattern
// A's (stop-and-wait, one connection), Δ+ pattern B's (a new connection
// per message).
func (p PubSub) undefined() []string {
	if p.Pattern == PatternReconnect {
		return []string{"completion_ms"}
	}
	return []string{"reconnect_ms", "reconnect_first_ms", "reconnect_p50_ms", "reconnect_p95_ms"}
}

func (p PubSub) describe() string {
	what := fmt.Sprintf("%d messages of %d B stop-and-wait on one connection; delay = publish → delivery; Δ = first publish → last delivery", p.Messages, p.Size)
	if p.Pattern == PatternReconnect {
		what = fmt.Sprintf("%d messages of %d B, each on a new connection; delay = Δ+ (set-up start → delivery)", p.Messages, p.Size)
		if p.Pipeline {
			what += "; each PUBLISH written with its CONNECT"
		}
	}
	return fmt.Sprintf("MQTT QoS %d through the %s broker: %s", p.QoS, p.Broker, what)
}

// pubsubHeader is the bytes of a message that identify it: magic,
// publisher, sequence number.
const pubsubHeader = 8

func pubsubPayload(pub, seq, size int) []byte {
	b := make([]byte, size)
	b[0], b[1] = 'T', 'M'
	binary.BigEndian.PutUint16(b[2:4], uint16(pub))
	binary.BigEndian.PutUint32(b[4:8], uint32(seq))
	for i := pubsubHeader; i < size; i++ {
		b[i] = byte('a' + i%26)
	}
	return b
}

// delivery is one message at the subscriber.
type delivery struct {
	seq int
	at  time.Time
}

// topicOf is publisher i's topic (from 1).
func topicOf(i int) string { return fmt.Sprintf("tlab/pubsub/publisher%d", i) }

// Run runs the pattern on a publisher-broker-subscriber cell.
func (p PubSub) Run(ctx context.Context, env *Env) error {
	ps, ok := proto.As[proto.PubSub](env.Protocol)
	if !ok {
		return fmt.Errorf("pubsub: %w", proto.Require(env.Protocol.Name, proto.CapPubSub))
	}
	pubs := env.Hosts.Group("publisher")
	env.Note("publishers", float64(len(pubs)))
	failAll := func(why string) error {
		env.Fail(why)
		p.emitUnsent(env.Emit, 0, why)
		return nil
	}
	port := env.Port(ps.DefaultPort())
	broker, err := serveBroker(env, "broker", port, p.Broker)
	if err != nil {
		return failAll("broker: " + err.Error())
	}
	defer broker.Close()

	// Each publisher paces itself on its deliveries: one channel each.
	// The subscriber follows the recorded publisher only (study D's
	// scenario B: "subscribed to the information provided by just one
	// publisher"), so the broker sends it nothing else. The others pace
	// themselves on a pacer that subscribes to their topics on the
	// broker's own host, so that their messages never cross the broker's
	// link to the subscriber; across a real path, where the broker runs on
	// the agent, the pacer sits with the subscriber instead.
	inbox := make([]chan delivery, len(pubs)+1)
	for i := range inbox {
		inbox[i] = make(chan delivery, 4096)
	}
	onMessage := func(_ string, payload []byte, at time.Time) {
		if len(payload) < pubsubHeader || payload[0] != 'T' || payload[1] != 'M' {
			return
		}
		pub := int(binary.BigEndian.Uint16(payload[2:4]))
		if pub < 1 || pub >= len(inbox) {
			return
		}
		select {
		case inbox[pub] <- delivery{seq: int(binary.BigEndian.Uint32(payload[4:8])), at: at}:
		default: // a publisher that stopped listening
		}
	}
	follow := func(id string, n proto.Net, addr string, topics []string) (proto.PubSubClient, error) {
		c, err := ps.NewPubSubClient(n, addr, env.Settings, proto.PubSubOptions{ClientID: id, KeepAlive: p.KeepAlive, OnMessage: onMessage})
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 2*p.Timeout)
		defer cancel()
		if _, err := c.Connect(cctx); err != nil {
			return nil, err
		}
		for _, t := range topics {
			if err := c.Subscribe(cctx, t, p.QoS); err != nil {
				c.Disconnect()
				return nil, err
			}
		}
		return c, nil
	}
	subAddr, err := env.Hosts.Addr("subscriber", "broker")
	if err != nil {
		return err
	}
	subscriberAt := net.JoinHostPort(subAddr.String(), fmt.Sprint(port))
	sub, err := follow("tlab-subscriber", env.Hosts.Net("subscriber"), subscriberAt, []string{topicOf(1)})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return failAll("subscriber: " + err.Error())
	}
	defer sub.Disconnect()
	if len(pubs) > 1 {
		var others []string
		for i := 2; i <= len(pubs); i++ {
			others = append(others, topicOf(i))
		}
		// The pacer follows the broker from beside it where it can.
		pacerNet, pacerIP, err := helperOf(env, "broker", "subscriber")
		if err != nil {
			return err
		}
		pacer, err := follow("tlab-pacer", pacerNet, net.JoinHostPort(pacerIP.String(), fmt.Sprint(port)), others)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return failAll("the background publishers' pacer: " + err.Error())
		}
		defer pacer.Disconnect()
	}

	// Background publishers run until the recorded one is done.
	bgCtx, stopBackground := context.WithCancel(ctx)
	var bg sync.WaitGroup
	var bgMessages int64
	var bgMu sync.Mutex
	for i := 2; i <= len(pubs); i++ {
		bg.Add(1)
		go func() {
			defer bg.Done()
			n := p.runPublisher(bgCtx, env, ps, pubs[i-1], i, inbox[i], nil)
			bgMu.Lock()
			bgMessages += int64(n)
			bgMu.Unlock()
		}()
	}
	p.runPublisher(ctx, env, ps, pubs[0], 1, inbox[1], env)
	stopBackground()
	bg.Wait()
	env.Note("background_messages", float64(bgMessages))
	return ctx.Err()
}

// runPublisher runs the pattern as publisher number idx on host. With rec
// set it records every message, marks the window and fails the cell on an
// error; without, it runs until ctx ends and returns how many messages got
// through.
func (p PubSub) runPublisher(ctx context.Context, env *Env, ps proto.PubSub, host string, idx int, inbox <-chan delivery, rec *Env) int {
	emit := func(r results.Record) {
		if rec != nil {
			rec.Emit(r)
		}
	}
	ip, err := env.Hosts.Addr(host, "broker")
	if err != nil {
		if rec != nil {
			rec.Fail(err.Error())
		}
		return 0
	}
	addr := net.JoinHostPort(ip.String(), fmt.Sprint(env.Port(ps.DefaultPort())))
	opts := proto.PubSubOptions{ClientID: fmt.Sprintf("tlab-publisher%d", idx), KeepAlive: p.KeepAlive}
	clock := time.Now()
	sinceMs := func(t time.Time) float64 { return ms(t.Sub(clock)) }
	topic := topicOf(idx)

	// await waits for message seq at the subscriber.
	await := func(seq int) (time.Time, error) {
		timer := time.NewTimer(p.Timeout)
		defer timer.Stop()
		for {
			select {
			case d := <-inbox:
				if d.seq == seq {
					return d.at, nil
				}
			case <-timer.C:
				return time.Time{}, fmt.Errorf("message %d did not reach the subscriber within %v", seq, p.Timeout)
			case <-ctx.Done():
				return time.Time{}, ctx.Err()
			}
		}
	}
	delivered := 0
	// fail records message seq's failure and the rest as never sent, and
	// fails the cell; a background publisher just stops.
	fail := func(r results.Record, err error) int {
		if rec == nil || ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return delivered
		}
		why := describeMQTTError(err)
		r.Error = why
		emit(r)
		p.emitUnsent(emit, r.Seq+1, fmt.Sprintf("not sent: message %d failed", r.Seq))
		rec.Fail(fmt.Sprintf("publisher: message %d: %s", r.Seq, why))
		return delivered
	}

	// Paho's client, or the pipelined publisher (pattern reconnect only).
	var c proto.PubSubClient
	var pipe proto.PipelinedPublisher
	if p.Pipeline {
		pl, ok := proto.As[proto.Pipeliner](env.Protocol)
		if !ok {
			return fail(results.Record{Seq: 0, Warmup: true, ReqBytes: p.Size}, fmt.Errorf("%s cannot pipeline", env.Protocol.Name))
		}
		if pipe, err = pl.NewPipelinedPublisher(env.Hosts.Net(host), addr, env.Settings, opts); err != nil {
			return fail(results.Record{Seq: 0, Warmup: true, ReqBytes: p.Size}, err)
		}
		defer pipe.Disconnect()
	} else {
		if c, err = ps.NewPubSubClient(env.Hosts.Net(host), addr, env.Settings, opts); err != nil {
			return fail(results.Record{Seq: 0, Warmup: p.firstSeq() > 0, ReqBytes: p.Size}, err)
		}
		defer c.Disconnect()
	}

	if p.Pattern == PatternStopAndWait {
		setup, err := c.Connect(ctx)
		if err != nil {
			return fail(results.Record{Seq: 0, ReqBytes: p.Size, ConnID: 1, NewConn: true}, err)
		}
		if rec != nil {
			rec.StartWindow()
		}
		var first time.Time
		for seq := 0; rec != nil && seq < p.Messages || rec == nil && ctx.Err() == nil; seq++ {
			r := results.Record{Seq: seq, ReqBytes: p.Size, ConnID: 1}
			if seq == 0 {
				r.NewConn, r.ConnectMs, r.HandshakeMs, r.Resumed, r.EarlyData = true, ms(setup.Connect), ms(setup.Handshake), setup.Resumed, setup.EarlyData
			}
			sent := time.Now()
			if seq == 0 {
				first = sent
			}
			r.ScheduledMs, r.SentMs = sinceMs(sent), sinceMs(sent)
			if err := c.Publish(ctx, topic, p.QoS, pubsubPayload(idx, seq, p.Size)); err != nil {
				return fail(r, err)
			}
			at, err := await(seq)
			if err != nil {
				return fail(r, err)
			}
			r.DoneMs, r.DelayMs, r.FirstByteMs = sinceMs(at), ms(at.Sub(sent)), ms(at.Sub(sent))
			r.Extra = map[string]float64{"latency_ms": ms(at.Sub(sent))}
			emit(r)
			delivered++
			if rec != nil && seq == p.Messages-1 {
				rec.Note("completion_ms", ms(at.Sub(first)))
			}
		}
		return delivered
	}

	// Reconnect: message 0 on the first connection is the warm-up that
	// gives the client a session ticket; every later one opens its own.
	// Pipelined, CONNECT and PUBLISH leave together.
	for seq := 0; rec != nil && seq <= p.Messages || rec == nil && ctx.Err() == nil; seq++ {
		if seq == 1 && rec != nil {
			rec.StartWindow()
		}
		var start, sent time.Time
		var setup proto.ConnSetup
		var err error
		if pipe != nil {
			pipe.Disconnect()
			start = time.Now()
			sent = start
			setup, err = pipe.ConnectAndPublish(ctx, topic, pubsubPayload(idx, seq, p.Size))
		} else {
			c.Disconnect()
			start = time.Now()
			if setup, err = c.Connect(ctx); err == nil {
				sent = time.Now()
				err = c.Publish(ctx, topic, p.QoS, pubsubPayload(idx, seq, p.Size))
			}
		}
		r := results.Record{Seq: seq, Warmup: seq == 0, ReqBytes: p.Size, NewConn: true, ScheduledMs: sinceMs(start), SentMs: sinceMs(start), SentUnixNs: start.UnixNano()}
		r.ConnID, r.ConnectMs, r.HandshakeMs, r.Resumed, r.EarlyData = setup.ConnID, ms(setup.Connect), ms(setup.Handshake), setup.Resumed, setup.EarlyData
		if err != nil {
			return fail(r, err)
		}
		at, err := await(seq)
		if err != nil {
			return fail(r, err)
		}
		r.DoneMs, r.DelayMs, r.FirstByteMs = sinceMs(at), ms(at.Sub(start)), ms(at.Sub(start))
		r.Extra = map[string]float64{"latency_ms": ms(at.Sub(sent)), "session_ms": ms(setup.Session)}
		emit(r)
		delivered++
	}
	return delivered
}

// firstSeq is the sequence number after the last one a pattern sends,
// less Messages: reconnect sends a warm-up message 0 first.
func (p PubSub) firstSeq() int {
	if p.Pattern == PatternReconnect {
		return 1
	}
	return 0
}

// emitUnsent records the messages from seq on as never sent, for why.
func (p PubSub) emitUnsent(emit func(results.Record), from int, why string) {
	for s := from; s < p.Messages+p.firstSeq(); s++ {
		emit(results.Record{Seq: s, Warmup: s < p.firstSeq(), ReqBytes: p.Size, Error: why, Unsent: true})
	}
}

// describeMQTTError says what happened in a user's words.
func describeMQTTError(err error) string {
	var ne *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out: " + err.Error()
	case errors.As(err, &ne) && strings.Contains(err.Error(), "refused"):
		return "the broker refused the connection (is it running?): " + err.Error()
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return "connection lost: " + err.Error()
	}
	return err.Error()
}
