package reqresp

import (
	"context"
	"testing"
	"time"
	"tlab/internal/proto"
	"tlab/internal/proto/quictest"

	"github.com/quic-go/quic-go/http3"
)

// TestH3ServerCloseEndsAConnectionWhoseClientVanished: as for quic's
// server, a client whose CONNECTION_CLOSE is lost must not hold the
// HTTP/3 server's Close until its connection's keep-alive (10 s) or idle
// timeout (30 s).
func TestH3ServerCloseEndsAConnectionWhoseClientVanished(t *testing.T) {
	s := quictest.Settings(t)
	port, err := quictest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := h3Proto{}.Serve(proto.LocalNet{}, port, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	qc, _ := proto.QUICConfig(s)
	conn, err := quictest.Dial(ctx, port, proto.QUICTLS(s.ClientTLS(http3.NextProtoH3)), qc)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer conn.Release()
	// The server serves the connection from its handshake on (it opens
	// its control stream): no request needed.
	conn.Vanish()
	quictest.RequirePromptClose(t, srv, "server")
}
