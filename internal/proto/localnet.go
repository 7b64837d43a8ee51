package proto

import (
	"context"
	"net"
)

// LocalNet opens sockets in the network this process runs in: the host's
// own, where a remote agent serves and where a remote run's client stands.
type LocalNet struct{}

// ListenWith listens with lc.
func (LocalNet) ListenWith(lc *net.ListenConfig, network, addr string) (net.Listener, error) {
	return lc.Listen(context.Background(), network, addr)
}

// ListenUDP opens a UDP socket.
func (LocalNet) ListenUDP(addr *net.UDPAddr) (*net.UDPConn, error) {
	return net.ListenUDP("udp", addr)
}

// DialContext dials with d.
func (LocalNet) DialContext(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	return d.DialContext(ctx, network, addr)
}
