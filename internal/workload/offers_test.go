package workload

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tlab/internal/proto"
	"tlab/internal/results"
)

// toyOffersKind is a server kind registered from this test file: it
// counts the servers it started.
const toyOffersKind = "toy-offers"

var toyOffersStarted = make(chan struct{}, 16)

func init() {
	RegisterServer(ServerKind{Name: toyOffersKind, Start: func(proto.Net, ServerRequest) (io.Closer, error) {
		toyOffersStarted <- struct{}{}
		return io.NopCloser(nil), nil
	}})
}

// declaringHosts are processHosts that declare what they offer: all but
// what lacking names for a role.
type declaringHosts struct {
	processHosts
	lacking map[string]Capability
}

func (h declaringHosts) Offers(role string, c Capability) bool { return h.lacking[role] != c }

// TestAServerIsAskedOnlyOfAHostThatOffersItsKind: a workload asks for a
// server of a registered kind one way (serve); a host that offers the
// kind starts it; a host that declares it does not is refused before any
// server starts, naming the role and the kind.
func TestAServerIsAskedOnlyOfAHostThatOffersItsKind(t *testing.T) {
	offering := &Env{Hosts: declaringHosts{}}
	srv, err := serve(offering, "server", toyOffersKind, ServerRequest{})
	if err != nil || len(toyOffersStarted) != 1 {
		t.Fatalf("a host that offers the kind: %v, %d started, want 1", err, len(toyOffersStarted))
	}
	srv.Close()
	<-toyOffersStarted

	lacking := &Env{Hosts: declaringHosts{lacking: map[string]Capability{"server": ServeKind(toyOffersKind)}}}
	_, err = serve(lacking, "server", toyOffersKind, ServerRequest{})
	var missing NotOffered
	if !errors.As(err, &missing) || missing.Role != "server" || !strings.Contains(err.Error(), "does not offer serve "+toyOffersKind) {
		t.Errorf("a host that lacks the kind: %v, want refused naming role server and serve %s", err, toyOffersKind)
	}
	if len(toyOffersStarted) != 0 {
		t.Errorf("a host that lacks the kind started its server")
	}
}

// TestCommandsRunWhereTheHostsOfferThem: a stack given as commands runs
// where the hosts of both roles offer commands (the client's one event
// becomes one record, and the server command ran), and where the server's
// host does not, the cell's run is refused naming the stack, the role and
// the capability, before either command runs.
func TestCommandsRunWhereTheHostsOfferThem(t *testing.T) {
	run := func(hosts Hosts) (*recorder, string, error) {
		dir := t.TempDir()
		rec := &recorder{notes: map[string]float64{}}
		env := &Env{Hosts: hosts, Dir: dir,
			Emit:        func(r results.Record) { rec.mu.Lock(); rec.records = append(rec.records, r); rec.mu.Unlock() },
			StartWindow: func() {},
			Note:        func(string, float64) {},
			Fail:        func(why string) { rec.mu.Lock(); rec.failed = append(rec.failed, why); rec.mu.Unlock() },
		}
		c := Command{Base: Periodic{Interval: 10 * time.Millisecond, ReqSize: 10, RespSize: 10, Count: 1},
			Stack:  CommandStack{Name: "mine", Server: `touch {dir}/server-ran; sleep 30`, Client: oneEvent},
			Common: Common{Count: 1}, Params: map[string]string{"interval": "10ms"}}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := c.Run(ctx, env)
		return rec, dir, err
	}

	rec, dir, err := run(declaringHosts{})
	if err != nil || len(rec.failed) > 0 || len(rec.records) != 1 {
		t.Errorf("hosts that offer commands: %v, failed %q, %d records, want 1", err, rec.failed, len(rec.records))
	}
	if _, err := os.Stat(filepath.Join(dir, CommandsDir, "server-ran")); err != nil {
		t.Errorf("hosts that offer commands: the server command did not run: %v", err)
	}

	rec, dir, err = run(declaringHosts{lacking: map[string]Capability{"server": RunCommands}})
	if !errors.Is(err, ErrNotOffered) || !strings.Contains(err.Error(), "stack mine") ||
		!strings.Contains(err.Error(), "role server here does not offer commands") {
		t.Errorf("a server's host without commands: %v, want refused naming stack mine, role server and commands", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, CommandsDir)); len(rec.records) > 0 || serr == nil {
		t.Errorf("a server's host without commands: a command ran (%d records, commands directory made)", len(rec.records))
	}
}
