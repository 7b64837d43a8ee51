package proto_test

import (
	"context"
	"net"
	"testing"
	"time"
	"tlab/internal/proto"
	"tlab/internal/proto/quictest"

	"github.com/quic-go/quic-go"
)

// TestQUICConnsClosesAConnectionAddedAfterCloseAll: a connection a
// server's accept loop hands over while the server closes (Accept
// returned it just before the listener closed) must be ended too, or it
// would hold the server's Close until its keep-alive.
func TestQUICConnsClosesAConnectionAddedAfterCloseAll(t *testing.T) {
	s := quictest.Settings(t)
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: quictest.Loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	qc, _ := proto.QUICConfig(s)
	ln, err := quic.Listen(udp, proto.QUICTLS(s.ServerTLS("tlab-test")), qc)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := quictest.Dial(ctx, udp.LocalAddr().(*net.UDPAddr).Port, proto.QUICTLS(s.ClientTLS("tlab-test")), qc)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Release()
	defer client.CloseWithError(0, "")
	conn, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var conns proto.QUICConns
	conns.CloseAll()
	if conns.Add(conn) {
		t.Error("Add after CloseAll reported the connection kept")
	}
	select {
	case <-conn.Context().Done():
	case <-time.After(2 * time.Second):
		t.Error("a connection added after CloseAll is still open 2 s later")
	}
}
