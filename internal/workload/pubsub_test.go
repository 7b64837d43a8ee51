package workload

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"tlab/internal/proto"
)

func pubsubHosts(publishers ...string) fakeHosts {
	return fakeHosts{groups: map[string][]string{"publisher": publishers}}
}

// TestPubSubStopAndWait: through an in-memory broker, every message is
// recorded once, in order, on one connection whose set-up the first
// record carries; the window opens once and Δ is noted.
func TestPubSubStopAndWait(t *testing.T) {
	b := &memBroker{}
	env, rec := newEnv(t, "mem", b, pubsubHosts("pub1"))
	p := PubSub{Pattern: PatternStopAndWait, Messages: 20, Size: 64, Timeout: time.Second}
	if err := p.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if len(rec.records) != 20 || len(rec.failed) != 0 || rec.windows != 1 {
		t.Fatalf("%d records, failures %v, %d windows", len(rec.records), rec.failed, rec.windows)
	}
	for i, r := range rec.records {
		if r.Seq != i || r.Error != "" || r.Warmup || r.ConnID != 1 || r.NewConn != (i == 0) || r.DelayMs < 0 {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if b.conns != 2 { // the subscriber's and the publisher's
		t.Errorf("%d connections, want 2", b.conns)
	}
	if c, ok := rec.notes["completion_ms"]; !ok || c < 0 {
		t.Errorf("completion_ms %v (noted %v)", c, ok)
	}
	if rec.notes["publishers"] != 1 {
		t.Errorf("publishers %v", rec.notes["publishers"])
	}
}

// TestPubSubReconnect: a warm-up message on the first connection, then a
// connection per message, each carrying its own set-up (resumed, early
// data from the second on).
func TestPubSubReconnect(t *testing.T) {
	b := &memBroker{}
	env, rec := newEnv(t, "mem", b, pubsubHosts("pub1"))
	p := PubSub{Pattern: PatternReconnect, Messages: 5, Size: 64, Timeout: time.Second}
	if err := p.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if len(rec.records) != 6 {
		t.Fatalf("%d records, want the warm-up and 5", len(rec.records))
	}
	for i, r := range rec.records {
		if r.Seq != i || r.Warmup != (i == 0) || !r.NewConn || r.ConnID != i+1 || r.Resumed != (i > 0) || r.EarlyData != (i > 0) {
			t.Errorf("record %d: %+v", i, r)
		}
		if _, ok := r.Extra["session_ms"]; !ok {
			t.Errorf("record %d has no session_ms", i)
		}
	}
}

// TestPubSubFailureKeepsTheCell: a connection lost at the 4th publish
// fails that message and records the rest as never sent; the cell is
// marked failed and Run returns nil, so the sweep goes on.
func TestPubSubFailureKeepsTheCell(t *testing.T) {
	b := &memBroker{failPublish: 4}
	env, rec := newEnv(t, "mem", b, pubsubHosts("pub1"))
	p := PubSub{Pattern: PatternStopAndWait, Messages: 10, Size: 64, Timeout: time.Second}
	if err := p.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if len(rec.records) != 10 || len(rec.failed) != 1 || !strings.Contains(rec.failed[0], "message 3") {
		t.Fatalf("%d records, failures %v", len(rec.records), rec.failed)
	}
	for i, r := range rec.records {
		switch {
		case i < 3 && r.Error != "":
			t.Errorf("message %d failed: %s", i, r.Error)
		case i == 3 && (!strings.HasPrefix(r.Error, "connection lost") || r.Unsent):
			t.Errorf("message 3: %+v", r)
		case i > 3 && (!r.Unsent || !strings.Contains(r.Error, "message 3 failed")):
			t.Errorf("message %d: %+v", i, r)
		}
	}
}

// TestPubSubBrokerDownFailsEveryMessage: a broker that cannot start and a
// broker that refuses connections both fail the cell with every message
// recorded as never sent.
func TestPubSubBrokerDownFailsEveryMessage(t *testing.T) {
	for name, b := range map[string]*memBroker{"no broker": {noBroker: true}, "refused": {refuse: true}} {
		t.Run(name, func(t *testing.T) {
			env, rec := newEnv(t, "mem", b, pubsubHosts("pub1"))
			p := PubSub{Pattern: PatternReconnect, Messages: 4, Size: 64, Timeout: time.Second}
			if err := p.Run(context.Background(), env); err != nil {
				t.Fatal(err)
			}
			if len(rec.failed) != 1 || len(rec.records) != 5 {
				t.Fatalf("failures %v, %d records", rec.failed, len(rec.records))
			}
			for _, r := range rec.records {
				if !r.Unsent || r.Error == "" {
					t.Errorf("%+v", r)
				}
			}
			if name == "refused" && !strings.Contains(rec.failed[0], "refused") {
				t.Errorf("the failure does not say the broker refused: %s", rec.failed[0])
			}
		})
	}
}

// TestPubSubBackgroundPublishers: with three publishers only the first is
// recorded; the others publish until it is done and are counted.
func TestPubSubBackgroundPublishers(t *testing.T) {
	b := &memBroker{latency: 200 * time.Microsecond}
	env, rec := newEnv(t, "mem", b, pubsubHosts("pub1", "pub2", "pub3"))
	p := PubSub{Pattern: PatternStopAndWait, Messages: 50, Size: 64, Timeout: time.Second}
	if err := p.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if len(rec.records) != 50 || rec.notes["publishers"] != 3 {
		t.Fatalf("%d records, %v publishers", len(rec.records), rec.notes["publishers"])
	}
	// Each background publisher may have one message in flight when the
	// recorded one ends: published, not yet counted as delivered.
	bg := rec.notes["background_messages"]
	if b.conns != 5 || bg > float64(b.publishes-50) || bg < float64(b.publishes-50-2) || bg < 2 {
		t.Errorf("%d connections (want the subscriber's, the pacer's and 3 publishers'), %d publishes in all, %v noted in the background", b.conns, b.publishes, bg)
	}
	// Study D's scenario B: "the subscriber was subscribed to the
	// information provided by just one publisher". The broker sends the
	// subscriber the recorded publisher's messages only; the others reach
	// the pacer.
	b.mu.Lock()
	defer b.mu.Unlock()
	if got := b.delivered["tlab-subscriber"]; len(got) != 1 || got[topicOf(1)] != 50 {
		t.Errorf("the subscriber got %v, want the 50 messages of %s only", got, topicOf(1))
	}
	if got := b.delivered["tlab-pacer"]; got[topicOf(1)] != 0 || got[topicOf(2)] == 0 || got[topicOf(3)] == 0 {
		t.Errorf("the pacer got %v, want the background publishers' messages only", got)
	}
}

// TestPubSubPipelineNeedsAPipeliner: asking a stack that cannot pipeline
// fails the cell with that reason instead of silently not pipelining.
func TestPubSubPipelineNeedsAPipeliner(t *testing.T) {
	env, rec := newEnv(t, "mem", &memBroker{}, pubsubHosts("pub1"))
	p := PubSub{Pattern: PatternReconnect, Messages: 3, Size: 64, Timeout: time.Second, Pipeline: true}
	if err := p.Run(context.Background(), env); err != nil {
		t.Fatal(err)
	}
	if len(rec.failed) != 1 || !strings.Contains(rec.failed[0], "cannot pipeline") {
		t.Errorf("failures %v", rec.failed)
	}
}

// helperElsewhere is Hosts whose broker runs where no helper client can
// sit beside it (a broker on a tlab agent): the pacer runs at the
// subscriber's host and reaches the broker at 192.0.2.9.
type helperElsewhere struct {
	fakeHosts
	asked []string
}

func (h *helperElsewhere) HelperOf(server, near string) (proto.Net, net.IP, error) {
	h.asked = append(h.asked, server+" near "+near)
	return nil, net.IPv4(192, 0, 2, 9), nil
}

// TestThePacerRunsWhereTheHostsSay: the background publishers' pacer
// follows the broker from beside it (over loopback, 127.0.0.1) on Hosts
// that say nothing, and from where Hosts that cannot place it there say
// (HelperOf, asked once for the broker near the subscriber), with one
// code path in the workload.
func TestThePacerRunsWhereTheHostsSay(t *testing.T) {
	p := PubSub{Pattern: PatternStopAndWait, Messages: 5, Size: 64, Timeout: time.Second}
	for _, c := range []struct {
		name  string
		hosts func(fakeHosts) Hosts
		want  string
	}{
		{"beside the broker", func(h fakeHosts) Hosts { return h }, "127.0.0.1:1883"},
		{"where the hosts say", func(h fakeHosts) Hosts { return &helperElsewhere{fakeHosts: h} }, "192.0.2.9:1883"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &memBroker{}
			env, _ := newEnv(t, "mem", b, pubsubHosts("pub1", "pub2"))
			env.Hosts = c.hosts(pubsubHosts("pub1", "pub2"))
			if err := p.Run(context.Background(), env); err != nil {
				t.Fatal(err)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			if got := b.dialled["tlab-pacer"]; got != c.want {
				t.Errorf("the pacer dialled %q, want %q", got, c.want)
			}
			if h, ok := env.Hosts.(*helperElsewhere); ok && !slices.Equal(h.asked, []string{"broker near subscriber"}) {
				t.Errorf("HelperOf asked %q, want once for the broker near the subscriber", h.asked)
			}
		})
	}
}
