package remote

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/bpf"
)

// ipPacket is an IP header (v4: 20 bytes, v6: 40) from src, as the
// socket filter sees it, followed by a few payload bytes.
func ipPacket(src netip.Addr) []byte {
	if src.Is4() {
		b := make([]byte, 28)
		b[0] = 0x45
		a := src.As4()
		copy(b[12:16], a[:])
		copy(b[16:20], []byte{10, 9, 8, 7}) // destination: another address
		return b
	}
	b := make([]byte, 48)
	b[0] = 0x60
	a := src.As16()
	copy(b[8:24], a[:])
	return b
}

// TestSourceFilterAdmitsOnlyThePeer runs the filter's program in a BPF
// machine on IP headers as RFC 791 and RFC 8200 lay them out: the source
// at bytes 12-15 (IPv4) or 8-23 (IPv6). One address admitted, every other
// (one bit off in any word, the other family, the destination field
// holding the peer) dropped.
func TestSourceFilterAdmitsOnlyThePeer(t *testing.T) {
	for _, tc := range []struct {
		peer  string
		admit []string
		drop  []string
	}{
		{"192.0.2.10", []string{"192.0.2.10"}, []string{"192.0.2.11", "193.0.2.10", "10.0.0.1", "::ffff:192.0.2.11", "2001:db8::1"}},
		{"2001:db8::a", []string{"2001:db8::a"}, []string{"2001:db8::b", "2001:db9::a", "2001:db8:0:1::a", "::a", "192.0.2.10"}},
	} {
		prog, err := sourceFilterProgram(netip.MustParseAddr(tc.peer), 0)
		if err != nil {
			t.Fatal(err)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range tc.admit {
			if n, err := vm.Run(ipPacket(netip.MustParseAddr(src).Unmap())); err != nil || n == 0 {
				t.Errorf("peer %s: a packet from %s was dropped (%d, %v)", tc.peer, src, n, err)
			}
		}
		for _, src := range tc.drop {
			if n, err := vm.Run(ipPacket(netip.MustParseAddr(src).Unmap())); err != nil || n != 0 {
				t.Errorf("peer %s: a packet from %s was admitted (%d, %v)", tc.peer, src, n, err)
			}
		}
		// The peer's address as the destination is not its source.
		p := ipPacket(netip.MustParseAddr("198.51.100.1"))
		if tc.peer == "192.0.2.10" {
			copy(p[16:20], []byte{192, 0, 2, 10})
			if n, _ := vm.Run(p); n != 0 {
				t.Error("a packet to the peer's address was admitted as from it")
			}
		}
	}
}

// TestAllowNetHearsOnlyThePeer: in the kernel, a UDP socket and a TCP
// listener opened through allowNet for 127.0.0.2 receive from 127.0.0.2
// and nothing from 127.0.0.1.
func TestAllowNetHearsOnlyThePeer(t *testing.T) {
	n, err := newAllowNet(net.IPv4(127, 0, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	udp, err := n.ListenUDP(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	send := func(from net.IP, msg string) {
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: from}, udp.LocalAddr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte(msg))
	}
	send(net.IPv4(127, 0, 0, 1), "stranger")
	send(net.IPv4(127, 0, 0, 2), "peer")
	buf := make([]byte, 64)
	udp.SetReadDeadline(time.Now().Add(2 * time.Second))
	k, from, err := udp.ReadFromUDP(buf)
	if err != nil || string(buf[:k]) != "peer" || !from.IP.Equal(net.IPv4(127, 0, 0, 2)) {
		t.Errorf("the first datagram read: %q from %v (%v), want the peer's only", buf[:k], from, err)
	}
	udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if k, from, err := udp.ReadFromUDP(buf); err == nil {
		t.Errorf("read %q from %v: the stranger's datagram came through", buf[:k], from)
	}

	ln, err := n.ListenWith(&net.ListenConfig{}, "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, Timeout: 500 * time.Millisecond}
	if c, err := d.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("a stranger connected to the filtered listener")
	}
	d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
	d.Timeout = 2 * time.Second
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("the peer could not connect: %v", err)
	}
	c.Close()
}
