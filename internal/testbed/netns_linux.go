package testbed

import (
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// newNamespace creates a network namespace held only by the returned handle:
// it has no name in /run/netns, so when tlab exits, however it exits, the
// kernel frees the namespace and every interface in it.
func newNamespace() (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the thread ends inside the new namespace and is
		// discarded with this goroutine, so no other goroutine runs there.
		runtime.LockOSThread()
		ns, err := netns.New()
		if err == nil {
			err = quietNamespace()
		}
		ch <- result{ns, err}
	}()
	r := <-ch
	if r.err != nil {
		if r.ns.IsOpen() {
			r.ns.Close()
		}
		return netns.None(), fmt.Errorf("creating a network namespace: %w", r.err)
	}
	return r.ns, nil
}

// quietNamespace sets the current thread's namespace so that its interfaces
// send nothing of their own: no IPv6 (router and neighbour solicitations,
// MLD reports) that would cross the emulated link and count as traffic.
func quietNamespace() error {
	for _, key := range []string{"net/ipv6/conf/all/disable_ipv6", "net/ipv6/conf/default/disable_ipv6"} {
		if err := writeSysctl(key, "1"); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// inNamespace runs fn on a fresh OS thread that has joined ns. Sockets that
// fn creates belong to ns and keep working from any goroutine afterwards.
func inNamespace(ns netns.NsHandle, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: a thread that switched namespaces must not run
		// other goroutines, so it is discarded when this one ends.
		runtime.LockOSThread()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Ethtool legacy commands that switch offloads (linux/ethtool.h). Offloads
// must be off on every veth of an emulated path: with them on, frames carry
// unfinished checksums (dropped by the receiver after forwarding) or arrive
// as GRO super-frames larger than the MTU, and loss and rate would act on
// 64 KB units instead of packets.
var offloadCommands = []struct {
	name string
	cmd  uint32
}{
	{"gro", unix.ETHTOOL_SGRO},
	{"gso", unix.ETHTOOL_SGSO},
	{"tso", unix.ETHTOOL_STSO},
	{"sg", unix.ETHTOOL_SSG},
	{"tx-checksum", unix.ETHTOOL_STXCSUM},
	{"rx-checksum", unix.ETHTOOL_SRXCSUM},
}

// disableOffloads turns every offload of ifname off. It runs in the
// interface's namespace.
func disableOffloads(ifname string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for _, o := range offloadCommands {
		value := struct{ cmd, data uint32 }{o.cmd, 0}
		ifr, err := unix.NewIfreq(ifname)
		if err != nil {
			return err
		}
		if err := ethtoolIoctl(fd, ifr, &value); err != nil && err != unix.EOPNOTSUPP {
			return fmt.Errorf("%s: ethtool %s off: %w", ifname, o.name, err)
		}
	}
	return nil
}

// packetSocket opens an AF_PACKET socket bound to ifname in the calling
// thread's namespace, set up for forwarding: it ignores its own output (or an
// ARP broadcast would loop forever), bypasses the qdisc and has buffers large
// enough for bursts.
func packetSocket(ifname string) (*os.File, error) {
	ifi, err := unix.NewIfreq(ifname)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("AF_PACKET socket: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	sfd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	err = unix.IoctlIfreq(sfd, unix.SIOCGIFINDEX, ifi)
	unix.Close(sfd)
	if err != nil {
		return nil, fmt.Errorf("%s: index: %w", ifname, err)
	}
	opts := []struct {
		level, opt, value int
		name              string
	}{
		{unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1, "PACKET_IGNORE_OUTGOING"},
		{unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1, "PACKET_QDISC_BYPASS"},
	}
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, o.level, o.opt, o.value); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", ifname, o.name, err)
		}
	}
	// Large buffers absorb bursts. Forcing past the sysctl limits needs
	// CAP_NET_ADMIN in the initial namespace; inside a user namespace the
	// capped request is the best there is.
	for _, b := range []struct{ force, plain int }{{unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}, {unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, b.force, 8<<20); err != nil {
			unix.SetsockoptInt(fd, unix.SOL_SOCKET, b.plain, 8<<20)
		}
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: int(ifi.Uint32())}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, fmt.Errorf("%s: bind: %w", ifname, err)
	}
	ok = true
	return os.NewFile(uintptr(fd), "packet:"+ifname), nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
