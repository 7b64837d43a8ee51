package reqresp

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/pki"
	"tlab/internal/proto"
	"tlab/internal/testbed"
	"tlab/internal/testbed/tbtest"
	"tlab/internal/units"
)

// loopThroughHandover runs a control loop (one 200 B request for 200 B
// every 20 ms, each given 300 ms) of stack name from a client on two
// links, "wifi" (3 ms each way) and "5g" (10 ms each way), to a server,
// through a break-before-make handover from wifi to 5g at 1.5 s of the
// link clock with an outage of 0.5 s, for 4 s. It returns, for each
// exchange, when it completed on the link clock (or, for one that failed,
// when it started) and whether it did; and whether the client's
// connection was MPTCP.
func loopThroughHandover(t *testing.T, name string) (starts []time.Duration, ok []bool, multipath bool) {
	t.Helper()
	return loopThrough(t, name, 4*time.Second, testbed.Handover{At: units.Duration(1500 * time.Millisecond), From: "wifi", To: "5g", Outage: units.Duration(500 * time.Millisecond)})
}

// loopThrough runs the loop of loopThroughHandover for total through
// handovers.
func loopThrough(t *testing.T, name string, total time.Duration, handovers ...testbed.Handover) (starts []time.Duration, ok []bool, multipath bool) {
	t.Helper()
	return loopThroughWith(t, name, total, nil, handovers...)
}

// loopThroughWith is loopThrough that hands the client to after once the
// loop has run, before it closes.
func loopThroughWith(t *testing.T, name string, total time.Duration, after func(proto.Client), handovers ...testbed.Handover) (starts []time.Duration, ok []bool, multipath bool) {
	t.Helper()
	tbtest.RequirePrivileges(t)
	oneWay := func(d time.Duration) emu.LinkConfig {
		dc := emu.DirectionConfig{Delay: units.Duration(d)}
		return emu.LinkConfig{Up: dc, Down: dc}
	}
	topo, err := testbed.MultiHomed("client", "server", []string{"wifi", "5g"},
		[]emu.LinkConfig{oneWay(3 * time.Millisecond), oneWay(10 * time.Millisecond)},
		handovers)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := testbed.Build(topo, testbed.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	ip, _ := tb.Addr("client", "server")
	certs, err := pki.NewCertificates(ip)
	if err != nil {
		t.Fatal(err)
	}
	s := proto.DefaultSettings()
	s.Certs = certs
	stack, _ := proto.Lookup(name)
	p, _ := proto.As[proto.Exchanger](stack)
	srv, err := p.Serve(tb.Host("server"), 4433, s)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := p.NewClient(ctx, tb.Host("client"), net.JoinHostPort(ip.String(), strconv.Itoa(4433)), s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	multipath = UsesMultipath(c)
	if rc, isRedial := c.(*redialClient); isRedial {
		multipath = UsesMultipath(rc.cur)
	}
	zero := tb.LinkClockZero()
	for next := time.Now(); time.Since(zero) < total; next = next.Add(20 * time.Millisecond) {
		time.Sleep(time.Until(next))
		start := time.Since(zero)
		ectx, ecancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := c.Exchange(ectx, 200, 200)
		ecancel()
		if err != nil && testing.Verbose() {
			t.Logf("exchange at %v: %v", start, err)
		}
		if err == nil {
			// A completed exchange counts at its end: the silences
			// are between answers.
			start = time.Since(zero)
		}
		starts, ok = append(starts, start), append(ok, err == nil)
		if d := time.Until(next); d < -20*time.Millisecond {
			next = time.Now() // a failed exchange took its 300 ms: go on from now
		}
	}
	if after != nil {
		after(c)
	}
	return starts, ok, multipath
}

// longestGap is the longest time between two answers with none between
// (or between the last answer and the last exchange), and when it began.
func longestGap(starts []time.Duration, ok []bool) (from, gap time.Duration) {
	last := time.Duration(-1)
	for i, s := range starts {
		if !ok[i] && i < len(starts)-1 {
			continue
		}
		if last >= 0 && s-last > gap {
			from, gap = last, s-last
		}
		last = s
	}
	return from, gap
}

// TestHandoverCostsTCPTheOutageAndMPTCPLess: in a break-before-make
// handover with an outage of 0.5 s, a TCP loop that redials has no path
// during the outage (its old connection's link is down and the new link
// has no route yet), so its answers are at least 0.5 s apart (less the
// 20 ms period: the last answer before may come as the break starts, the
// first after may take as long as an exchange over 5g); plain TCP keeps its connection, whose address's link
// never comes back, so it completes nothing after the break; MPTCP's
// subflow on 5g was there before the break (an endpoint per link), so it
// has no such silence: its longest gap is shorter than the outage.
func TestHandoverCostsTCPTheOutageAndMPTCPLess(t *testing.T) {
	const at, outage = 1500 * time.Millisecond, 500 * time.Millisecond
	slack := 50 * time.Millisecond // the handover's timer on a busy host
	t.Run("tcp-redial", func(t *testing.T) {
		starts, ok, _ := loopThroughHandover(t, "tcp-redial")
		from, gap := longestGap(starts, ok)
		t.Logf("longest gap %v from %v", gap, from)
		if gap < outage-20*time.Millisecond {
			t.Errorf("longest gap %v, want at least the outage %v", gap, outage)
		}
		if from < at-slack-300*time.Millisecond || from > at+slack {
			t.Errorf("the gap began at %v, want at the break (%v)", from, at)
		}
		if !ok[len(ok)-1] {
			t.Errorf("the last exchange at %v failed: the redial did not reach the server over 5g", starts[len(starts)-1])
		}
	})
	t.Run("tcp", func(t *testing.T) {
		starts, ok, _ := loopThroughHandover(t, "tcp")
		for i, s := range starts {
			if s > at+slack && ok[i] {
				t.Errorf("exchange at %v completed over a connection whose link went down at %v", s, at)
			}
		}
	})
	t.Run("mptcp", func(t *testing.T) {
		starts, ok, multipath := loopThroughHandover(t, "mptcp")
		if !multipath {
			t.Fatal("the connection is not MPTCP")
		}
		from, gap := longestGap(starts, ok)
		failed := 0
		for _, k := range ok {
			if !k {
				failed++
			}
		}
		t.Logf("longest gap %v from %v, %d of %d exchanges failed", gap, from, failed, len(ok))
		for i := 1; i < len(starts); i++ {
			if d := starts[i] - starts[i-1]; d > 100*time.Millisecond {
				t.Logf("exchange at %v: next starts %v later", starts[i-1], d)
			}
		}
		if gap >= outage {
			t.Errorf("longest gap %v, want shorter than the outage %v: the 5g subflow should carry on", gap, outage)
		}
		if !ok[len(ok)-1] {
			t.Error("the last exchange failed")
		}
	})
}

// TestMPTCPComesBackWithTheLinkItLost: wifi goes at 1.5 s (5g up and
// routed at 2 s), then 5g goes at 3 s and wifi comes back, with the route,
// at 3.5 s. Between 3 and 3.5 s no link is up, so MPTCP too has a silence
// of at least that outage; its wifi subflow closed when the host gave up
// wifi at 2 s, and the endpoint added again at 3.5 s opens a new one
// (the kernel's path manager does so for every open connection when an
// endpoint is added), so the loop answers again within the 300 ms an
// exchange is given after that, and its last exchange completes.
func TestMPTCPComesBackWithTheLinkItLost(t *testing.T) {
	const back, outage = 3 * time.Second, 500 * time.Millisecond
	starts, ok, multipath := loopThrough(t, "mptcp", 5*time.Second,
		testbed.Handover{At: units.Duration(1500 * time.Millisecond), From: "wifi", To: "5g", Outage: units.Duration(outage)},
		testbed.Handover{At: units.Duration(back), From: "5g", To: "wifi", Outage: units.Duration(outage)})
	if !multipath {
		t.Fatal("the connection is not MPTCP")
	}
	from, gap := longestGap(starts, ok)
	t.Logf("longest gap %v from %v", gap, from)
	if gap < outage-20*time.Millisecond {
		t.Errorf("longest gap %v: MPTCP had no link up for %v", gap, outage)
	}
	var again time.Duration = -1
	for i, s := range starts {
		if s > back+outage && ok[i] {
			again = s
			break
		}
	}
	if again < 0 || again > back+outage+300*time.Millisecond+50*time.Millisecond {
		t.Errorf("the first exchange to complete after wifi came back at %v started at %v", back+outage, again)
	}
	if !ok[len(ok)-1] {
		t.Error("the last exchange failed")
	}
}

// TestQUICMigratesToTheNewLink: quic-migrate sends from wifi's address
// (its socket is bound to it), so after wifi goes at 1.5 s its exchanges
// fail through the outage; once the route is on 5g (2 s), the first
// exchange after a failure moves the connection to a socket on 5g's
// address (a path probed, then switched to) and the loop answers again
// on the same connection: its last exchange completes, it opened one
// connection, and it migrated once.
func TestQUICMigratesToTheNewLink(t *testing.T) {
	var migrations, conns int
	starts, ok, _ := loopThroughWith(t, "quic-migrate", 4*time.Second, func(c proto.Client) {
		if m, is := c.(*migratingClient); is {
			migrations, conns = m.Migrations(), m.Connections()
		}
	}, testbed.Handover{At: units.Duration(1500 * time.Millisecond), From: "wifi", To: "5g", Outage: units.Duration(500 * time.Millisecond)})
	from, gap := longestGap(starts, ok)
	t.Logf("longest gap %v from %v; %d migration(s), %d connection(s)", gap, from, migrations, conns)
	if gap < 500*time.Millisecond-20*time.Millisecond {
		t.Errorf("longest gap %v: shorter than the outage", gap)
	}
	if !ok[len(ok)-1] {
		t.Error("the last exchange failed: the connection did not move to 5g")
	}
	if migrations != 1 || conns != 1 {
		t.Errorf("%d migrations over %d connections, want one migration of the one connection", migrations, conns)
	}
}
