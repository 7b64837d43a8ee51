package cross

import (
	"context"
	"testing"
	"time"
	"tlab/internal/proto"
	"tlab/internal/proto/quictest"
)

// TestQUICBulkServerCloseEndsAFlowWhoseClientVanished: a bulk client whose
// CONNECTION_CLOSE is lost (its own load fills the queue that drops it)
// must not hold the bulk server's Close until its connection's keep-alive
// (10 s) or idle timeout (30 s).
func TestQUICBulkServerCloseEndsAFlowWhoseClientVanished(t *testing.T) {
	s := quictest.Settings(t)
	srv, err := ServeBulk(proto.LocalNet{}, "quic", 0, s, BulkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	qc, _ := proto.QUICConfig(s)
	conn, err := quictest.Dial(ctx, srv.Port, proto.QUICTLS(s.ClientTLS(crossALPN)), qc)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer conn.Release()
	// An up flow (header: direction 'u', index 0) and some of its bytes.
	st, err := conn.OpenStreamSync(ctx)
	if err == nil {
		_, err = st.Write(append([]byte{'u', 0}, make([]byte, 10000)...))
	}
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	conn.Vanish()
	quictest.RequirePromptClose(t, srv, "server")
}
