package reqresp

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
	"tlab/internal/pki"
	"tlab/internal/proto"

	"github.com/quic-go/quic-go"
)

// TestQUICServerCloseEndsAConnectionWhoseClientVanished: a client whose
// CONNECTION_CLOSE is lost (dropped behind a full queue, as when a
// cancelled transfer's cell ends) must not hold the server's Close until the
// connection's idle timeout (proto's 30 s): Close ends the connections
// it accepted. It once held a cancelled flow-control cell 10 s past its
// deadline.
// mutableConn is a client's socket that drops what it sends once muted.
// A plain net.PacketConn (not the UDPConn itself, whose batch writes
// quic-go would use instead of WriteTo).
type mutableConn struct {
	net.PacketConn
	mute atomic.Bool
}

func (c *mutableConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c.mute.Load() {
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, addr)
}

func TestQUICServerCloseEndsAConnectionWhoseClientVanished(t *testing.T) {
	ip := net.IPv4(127, 0, 0, 1)
	certs, err := pki.NewCertificates(ip)
	if err != nil {
		t.Fatal(err)
	}
	s := proto.DefaultSettings()
	s.Certs = certs
	// A free UDP port on loopback for the server.
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	srv, err := quicProto{perRequest: true}.Serve(proto.LocalNet{}, port, s)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	qc, _ := proto.QUICConfig(s)
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: ip})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer udp.Close()
	client := &mutableConn{PacketConn: udp}
	conn, err := quic.Dial(ctx, client, &net.UDPAddr{IP: ip, Port: port}, proto.QUICTLS(s.ClientTLS(alpnTLab)), qc)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	// One exchange, so that the server has accepted the connection and
	// serves its streams.
	st, err := conn.OpenStreamSync(ctx)
	if err == nil {
		err = writeRequest(st, 10, 100)
	}
	if err == nil {
		st.Close()
		_, _, _, err = readResponse(bufio.NewReader(st))
	}
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	// Both ends idle, every packet acknowledged: the server's connection
	// has nothing to send (a write on its closed socket would end it).
	time.Sleep(300 * time.Millisecond)
	// The client closes, but its CONNECTION_CLOSE is lost (its socket
	// stays open, so nothing else tells the server: no ICMP).
	client.mute.Store(true)
	conn.CloseWithError(0, "")
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case <-closed:
		// A close is a few local steps; 2 s is far below the idle timeout.
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("the server's Close took %v with a vanished client", took)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the server's Close waited 20 s for a vanished client's connection")
	}
}
