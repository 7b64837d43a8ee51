package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// allowNet opens the agent's server sockets so that the kernel delivers
// them only what comes from the controller's address: a socket filter is
// attached before the socket is bound, so no packet from anyone else is
// ever queued to it. A TCP listener never sees another host's SYN, and a
// UDP server (the frame servers, RTCP, QUIC, the name server, the path
// prober) cannot be made to answer a forged source elsewhere: it hears
// nothing from there. It is proto.Net, so every protocol's server gets it
// without knowing.
type allowNet struct {
	peer netip.Addr
}

// newAllowNet admits only ip (an IPv4 peer also as IPv4-mapped IPv6, as a
// dual-stack socket sees it).
func newAllowNet(ip net.IP) (allowNet, error) {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return allowNet{}, fmt.Errorf("the controller's address %v", ip)
	}
	return allowNet{peer: a.Unmap()}, nil
}

// ListenWith listens with lc, the filter attached.
func (n allowNet) ListenWith(lc *net.ListenConfig, network, addr string) (net.Listener, error) {
	c := *lc
	c.Control = n.control(lc.Control)
	return c.Listen(context.Background(), network, addr)
}

// ListenUDP opens a UDP socket, the filter attached.
func (n allowNet) ListenUDP(addr *net.UDPAddr) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: n.control(nil)}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr.String())
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// DialContext dials with d (the agent's servers do not dial; nothing to
// filter).
func (allowNet) DialContext(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	return d.DialContext(ctx, network, addr)
}

// control runs then (a protocol's own socket options) and attaches the
// filter.
func (n allowNet) control(then func(network, address string, c syscall.RawConn) error) func(string, string, syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if then != nil {
			if err := then(network, address, c); err != nil {
				return err
			}
		}
		prog, err := sourceFilter(n.peer, skfNetOff)
		if err != nil {
			return err
		}
		var serr error
		err = c.Control(func(fd uintptr) {
			serr = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]})
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("admitting only the controller's address: %w", err)
		}
		return nil
	}
}

// skfNetOff is Linux's SKF_NET_OFF: a socket filter's loads from it on
// read the network (IP) header, whichever layer the socket is at.
const skfNetOff = 0xfff00000 // -0x100000

// sourceFilter is a classic BPF program that accepts a packet whose IP
// source address is peer and drops every other. base is where the IP
// header starts for the loads: skfNetOff in the kernel, 0 in a test that
// runs the program on a bare IP packet.
func sourceFilter(peer netip.Addr, base uint32) ([]unix.SockFilter, error) {
	prog, err := sourceFilterProgram(peer, base)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, err
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

// sourceFilterProgram is sourceFilter's program before assembly.
func sourceFilterProgram(peer netip.Addr, base uint32) ([]bpf.Instruction, error) {
	const drop, accept = 0, 0xffffffff
	var prog []bpf.Instruction
	// The IP version is the first byte's high nibble.
	prog = append(prog,
		bpf.LoadAbsolute{Off: base, Size: 1},
		bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4},
	)
	var words []uint32
	var version, srcOff uint32
	if peer.Is4() {
		b := peer.As4()
		words, version, srcOff = []uint32{be32(b[:])}, 4, 12
	} else if peer.Is6() {
		b := peer.As16()
		words, version, srcOff = []uint32{be32(b[0:]), be32(b[4:]), be32(b[8:]), be32(b[12:])}, 6, 8
	} else {
		return nil, errors.New("no address to admit")
	}
	// Each test jumps to the final drop when it fails: the instructions
	// after it are the remaining words' two each, and the accept.
	left := uint8(2*len(words) + 1)
	prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: version, SkipFalse: left})
	for i, w := range words {
		left -= 2
		prog = append(prog,
			bpf.LoadAbsolute{Off: base + srcOff + uint32(4*i), Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: w, SkipFalse: left},
		)
	}
	return append(prog, bpf.RetConstant{Val: accept}, bpf.RetConstant{Val: drop}), nil
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
