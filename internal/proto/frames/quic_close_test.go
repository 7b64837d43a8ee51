package frames

import (
	"context"
	"testing"
	"time"
	"tlab/internal/proto"
	"tlab/internal/proto/quictest"
)

// TestQUICFrameServersCloseEndAConnectionWhoseClientVanished: a client
// whose CONNECTION_CLOSE is lost (dropped behind a full emulated queue)
// must not hold a frame server's Close until its connection's keep-alive
// (10 s) or idle timeout (30 s): quic-go's closed listener leaves the
// connections it accepted alive, so Close ends them itself.
func TestQUICFrameServersCloseEndAConnectionWhoseClientVanished(t *testing.T) {
	s := quictest.Settings(t)
	opts := proto.FrameOptions{FPS: 30, ReassemblyTimeout: 200 * time.Millisecond}
	for _, tc := range []struct {
		name      string
		frames    proto.FrameTransport
		datagrams bool
		// send makes the server serve the connection: a frame on a
		// stream of its own, or a datagram.
		send func(context.Context, *quictest.Client) error
	}{
		{"quic-streams", quicStreamFrames{}, false, func(ctx context.Context, c *quictest.Client) error {
			st, err := c.OpenStreamSync(ctx)
			if err != nil {
				return err
			}
			if err := writeStreamFrame(st, 1, make([]byte, 1000)); err != nil {
				return err
			}
			return st.Close()
		}},
		{"quic-dgram", quicDgramFrames{}, true, func(_ context.Context, c *quictest.Client) error {
			return c.SendDatagram(make([]byte, 1000))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port, err := quictest.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			srv, err := tc.frames.ServeFrames(proto.LocalNet{}, port, s, opts, func(proto.FrameArrival) int { return 100 })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			qc, _ := proto.QUICConfig(s)
			qc.EnableDatagrams = tc.datagrams
			conn, err := quictest.Dial(ctx, port, proto.QUICTLS(s.ClientTLS(alpnFrames)), qc)
			if err != nil {
				srv.Close()
				t.Fatal(err)
			}
			defer conn.Release()
			if err := tc.send(ctx, conn); err != nil {
				srv.Close()
				t.Fatal(err)
			}
			conn.Vanish()
			quictest.RequirePromptClose(t, srv, "server")
		})
	}
}
