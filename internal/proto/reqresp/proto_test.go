package reqresp

import (
	"context"
	"strconv"
	"testing"
	"time"
	"tlab/internal/pki"
	"tlab/internal/proto"

	"tlab/internal/testbed/tbtest"
)

func TestMain(m *testing.M) { tbtest.Main(m) }

// TestEveryProtocolExchanges runs a few exchanges of every request/response protocol through
// a 10 ms RTT link: each completes, returns the asked size, and takes at
// least the RTT.
func TestEveryProtocolExchanges(t *testing.T) {
	tb := tbtest.ClientServer(t, 5*time.Millisecond)
	ip, _ := tb.Addr("client", "server")
	certs, err := pki.NewCertificates(ip)
	if err != nil {
		t.Fatal(err)
	}
	s := proto.DefaultSettings()
	s.Certs = certs
	for i, name := range proto.NamesWith(proto.CapRequestResponse) {
		t.Run(name, func(t *testing.T) {
			stack, _ := proto.Lookup(name)
			p, _ := proto.As[proto.Exchanger](stack)
			port := 5000 + i
			srv, err := p.Serve(tb.Host("server"), port, s)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := p.NewClient(ctx, tb.Host("client"), ip.String()+":"+itoa(port), s)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for k := 0; k < 5; k++ {
				ex, err := c.Exchange(ctx, 300, 700+k)
				if err != nil {
					t.Fatalf("exchange %d: %v", k, err)
				}
				if ex.RespBytes != 700+k {
					t.Errorf("exchange %d: %d response bytes, want %d", k, ex.RespBytes, 700+k)
				}
				if d := ex.Done.Sub(ex.Start); d < 10*time.Millisecond {
					t.Errorf("exchange %d took %v, less than the 10 ms RTT", k, d)
				}
				if ex.FirstByte.IsZero() || ex.FirstByte.After(ex.Done) || ex.ConnID < 1 {
					t.Errorf("exchange %d: first byte %v, done %v, conn %d", k, ex.FirstByte, ex.Done, ex.ConnID)
				}
				if k == 0 && !ex.NewConn {
					t.Errorf("first exchange does not report its connection set-up")
				}
				if k > 0 && ex.NewConn {
					t.Errorf("exchange %d opened a connection although the previous one was idle", k)
				}
			}
			if n := c.Connections(); n != 1 {
				t.Errorf("%d connections for sequential exchanges, want 1", n)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
