package proto

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
)

// TestTCPConnsReadTheSocket: the labels come from the connection, not the
// settings. Asked for reno, a connection runs reno; asked for nothing, it
// runs the kernel's default (net.ipv4.tcp_congestion_control), which the
// settings do not know. On loopback without net.ipv4.tcp_ecn = 1 no ECN
// is negotiated.
func TestTCPConnsReadTheSocket(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
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
			defer c.Close()
		}
	}()
	def, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Skip("no /proc/sys/net/ipv4/tcp_congestion_control")
	}
	ecnSysctl, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_ecn")
	for asked, want := range map[string]string{"reno": "reno", "": strings.TrimSpace(string(def))} {
		s := Settings{Congestion: asked, TCP: &TCPConns{}}
		c, _, err := DialTCP(context.Background(), LocalNet{}, ln.Addr().String(), s)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		cc, ecn := s.TCP.Negotiated()
		if cc != want {
			t.Errorf("asked for %q: the connection ran %q, want %q", asked, cc, want)
		}
		if strings.TrimSpace(string(ecnSysctl)) != "1" && ecn != false {
			t.Errorf("ECN %v without net.ipv4.tcp_ecn = 1 on the client", ecn)
		}
	}
	if cc, ecn := (&TCPConns{}).Negotiated(); cc != "" || ecn != "" {
		t.Errorf("no connection: %q %v, want empty", cc, ecn)
	}
}
