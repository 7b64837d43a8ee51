package reqresp

import (
	"bufio"
	"context"
	"testing"
	"time"
	"tlab/internal/proto"
	"tlab/internal/proto/quictest"
)

// TestQUICServerCloseEndsAConnectionWhoseClientVanished: a client whose
// CONNECTION_CLOSE is lost (dropped behind a full queue, as when a
// cancelled transfer's cell ends) must not hold the server's Close until the
// connection's idle timeout (proto's 30 s): Close ends the connections
// it accepted. It once held a cancelled flow-control cell 10 s past its
// deadline. quic-migrate's server is quic's, checked here too.
func TestQUICServerCloseEndsAConnectionWhoseClientVanished(t *testing.T) {
	for _, p := range []interface {
		proto.Exchanger
		Name() string
	}{quicProto{perRequest: true}, quicProto{}, quicMigrateProto{}} {
		t.Run(p.Name(), func(t *testing.T) {
			s := quictest.Settings(t)
			port, err := quictest.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			srv, err := p.Serve(proto.LocalNet{}, port, s)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			qc, _ := proto.QUICConfig(s)
			conn, err := quictest.Dial(ctx, port, proto.QUICTLS(s.ClientTLS(alpnTLab)), qc)
			if err != nil {
				srv.Close()
				t.Fatal(err)
			}
			defer conn.Release()
			// One exchange, so that the server has accepted the connection and
			// serves its streams.
			if err := exchangeOnce(ctx, conn); err != nil {
				srv.Close()
				t.Fatal(err)
			}
			conn.Vanish()
			quictest.RequirePromptClose(t, srv, "server")
		})
	}
}

func exchangeOnce(ctx context.Context, conn *quictest.Client) error {
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	if err := writeRequest(st, 10, 100); err != nil {
		return err
	}
	st.Close()
	_, _, _, err = readResponse(bufio.NewReader(st))
	return err
}
