package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"tlab/internal/emu"
	"tlab/internal/sysx"
)

// Options tune how a testbed is built. The zero value is a sensible default.
type Options struct {
	// Seed drives every random decision of the emulator.
	Seed uint64
	// MTU of every interface (default 1500). All veths of a path share it:
	// a mismatch black-holes TCP without an error.
	MTU int
	// Emulator chooses the engine: its timer mode (emu.ModeAdaptive, the
	// default: blocks, spinning only within the wake-up latency it
	// measures; emu.ModeBusy: one core polls; or emu.ModeSleep: a fixed
	// spin), where a frame's arrival time comes from, which engine, and
	// its loop's CPU. Spin is how long before a release the sleep-mode
	// engine starts to spin (default DefaultSpin).
	Emulator emu.EngineOptions
	Spin     time.Duration
	// RealtimePriority runs the emulator under SCHED_FIFO when above 0.
	RealtimePriority int
	// TCPECN has every host's TCP ask for ECN (the kernel's tcp_ecn = 1
	// in its namespace); otherwise the kernel's default (2) answers ECN
	// but never asks for it.
	TCPECN bool
	// Direct joins the two hosts of a single link by a bare veth pair with
	// no emulator: the baseline that calibration compares against. The
	// link's config must be empty.
	Direct bool
	// CaptureDir, when set, receives a pcap file per host interface.
	CaptureDir string
	// Reach are real addresses beyond the testbed that its hosts must
	// reach (through Egress): the links' subnets keep clear of them.
	Reach []net.IP
	// Label says, in the run registry, what this testbed is for (for
	// example the results directory of the run), so that a concurrent
	// run can name it in its warnings.
	Label string
}

// DefaultSpin is how long before a release the sleeping engine starts to
// spin. The notes this lab started from measured ~60 us of oversleep in a
// 5 ms timerfd wait and 50-60 us VM wake-ups; 150 us covers both.
const DefaultSpin = 150 * time.Microsecond

// Iface is one of a host's interfaces.
type Iface struct {
	Name string           `json:"name"`
	Link string           `json:"link"`
	IP   net.IP           `json:"ip"`
	MAC  net.HardwareAddr `json:"mac"`
}

// Host is a network namespace with its interfaces.
type Host struct {
	Name   string
	Ifaces []Iface
	ns     netns.NsHandle
	tb     *Testbed
	// cpu is the host's cgroup when its topology limits its CPU.
	cpu *cpuGroup
}

// Do runs fn on a fresh OS thread inside the host's namespace. Sockets that
// fn opens belong to the host and can be used from any goroutine after.
func (h *Host) Do(fn func() error) error { return inNamespace(h.ns, fn) }

// Listen opens a stream listener (tcp) in the host.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := h.Do(func() (err error) { l, err = net.Listen(network, addr); return })
	return l, err
}

// ListenWith opens a stream listener in the host with socket options from
// lc (for example a congestion control set in lc.Control).
func (h *Host) ListenWith(lc *net.ListenConfig, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := h.Do(func() (err error) { l, err = lc.Listen(context.Background(), network, addr); return })
	return l, err
}

// ListenPacket opens a packet socket (udp) in the host.
func (h *Host) ListenPacket(network, addr string) (net.PacketConn, error) {
	var c net.PacketConn
	err := h.Do(func() (err error) { c, err = net.ListenPacket(network, addr); return })
	return c, err
}

// ListenUDP opens a UDP socket in the host.
func (h *Host) ListenUDP(addr *net.UDPAddr) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := h.Do(func() (err error) { c, err = net.ListenUDP("udp", addr); return })
	return c, err
}

// DialContext dials from the host; d may be nil. Its signature fits
// net/http's Transport.DialContext once d is bound.
func (h *Host) DialContext(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	if d == nil {
		d = &net.Dialer{}
	}
	var c net.Conn
	err := h.Do(func() (err error) { c, err = d.DialContext(ctx, network, addr); return })
	return c, err
}

// Testbed is a built topology. Close removes everything it made.
type Testbed struct {
	// ID names this run in the registry, temp paths and logs.
	ID   string
	Topo Topology
	// TempDir belongs to this run and is removed by Close.
	TempDir string

	opts Options
	// first offsets the links' subnets (firstSubnet).
	first  int
	hosts  map[string]*Host
	router netns.NsHandle
	emu    *emu.Process
	run    *runRecord

	mu      sync.Mutex
	closers []func() error
	// linkZero is the link clock's zero in wall time (multihome_linux.go).
	linkZero time.Time
	closed   bool
}

// Build creates the namespaces, veths and emulator of topo. On any error it
// removes what it had made before returning.
func Build(topo Topology, opts Options) (tb *Testbed, err error) {
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	if opts.Direct && (len(topo.Links) != 1 || len(topo.Links[0].A) != 1 || len(topo.Links[0].B) != 1) {
		return nil, errors.New("testbed: a direct link joins exactly two hosts")
	}
	if opts.Direct && !topo.Links[0].Config.IsPerfect() {
		return nil, errors.New("testbed: a direct link cannot emulate anything; leave its config empty")
	}
	if err := CheckPrivileges(); err != nil {
		return nil, err
	}
	if opts.MTU == 0 {
		opts.MTU = 1500
	}
	if opts.Emulator.Mode == "" {
		opts.Emulator.Mode = emu.ModeAdaptive
	}
	if opts.Spin == 0 {
		opts.Spin = DefaultSpin
	}
	first, err := firstSubnet(len(topo.Links), opts.Reach)
	if err != nil {
		return nil, err
	}
	tb = &Testbed{ID: newRunID(), Topo: topo, opts: opts, first: first, hosts: map[string]*Host{}}
	defer func() {
		if err != nil {
			tb.Close()
			tb = nil
		}
	}()
	if tb.run, err = register(tb.ID, opts.Label); err != nil {
		return tb, err
	}
	tb.TempDir = tb.run.TempDir
	tb.onClose(tb.run.remove)

	for _, name := range topo.Hosts {
		ns, err := newNamespace()
		if err != nil {
			return tb, fmt.Errorf("host %s: %w", name, err)
		}
		tb.onClose(ns.Close)
		h := &Host{Name: name, ns: ns, tb: tb}
		if err := h.Do(func() error { return linkUp("lo") }); err != nil {
			return tb, fmt.Errorf("host %s: lo: %w", name, err)
		}
		if opts.TCPECN {
			if err := h.Do(func() error { return writeSysctl("net/ipv4/tcp_ecn", "1") }); err != nil {
				return tb, fmt.Errorf("host %s: tcp_ecn: %w", name, err)
			}
		}
		if l, ok := topo.CPU[name]; ok {
			// Made before any process of the host starts, so Close
			// removes it after they have stopped.
			if h.cpu, err = newCPUGroup(runGroupName(tb.ID, name), l); err != nil {
				return tb, fmt.Errorf("host %s: cpu limit: %w", name, err)
			}
			tb.onClose(h.cpu.remove)
		}
		tb.hosts[name] = h
	}
	if !opts.Direct {
		if tb.router, err = newNamespace(); err != nil {
			return tb, fmt.Errorf("router: %w", err)
		}
		tb.onClose(tb.router.Close)
	}
	var ports []*os.File
	var linkSpecs []emu.LinkSpec
	for li, l := range topo.Links {
		spec, files, err := tb.buildLink(li, l)
		if err != nil {
			return tb, fmt.Errorf("link %s: %w", l.Name, err)
		}
		linkSpecs = append(linkSpecs, spec)
		ports = append(ports, files...)
	}
	if err := tb.addNeighbours(); err != nil {
		return tb, err
	}
	if err := tb.setupMultiHome(); err != nil {
		return tb, err
	}
	if opts.CaptureDir != "" {
		if err := tb.startCaptures(opts.CaptureDir); err != nil {
			return tb, err
		}
	}
	if opts.Direct {
		return tb, nil
	}
	cpu := -1
	if opts.Emulator.CPU == 0 {
		cpu = sysx.EmulatorCPU()
	} else if opts.Emulator.CPU > 0 {
		cpu = opts.Emulator.CPU
	}
	espec := emu.EngineSpec{Seed: opts.Seed, EngineOptions: opts.Emulator, SpinNs: opts.Spin.Nanoseconds(), RealtimePriority: opts.RealtimePriority, CPU: cpu, MTU: opts.MTU, Links: linkSpecs}
	tb.emu, err = emu.Start(espec, ports)
	for _, f := range ports {
		f.Close() // the child has its own copies
	}
	if err != nil {
		return tb, err
	}
	tb.run.addPID(tb.emu.PID())
	tb.onClose(tb.emu.Close)
	tb.serveLive()
	if err := tb.startHandovers(); err != nil {
		return tb, err
	}
	return tb, nil
}

// buildLink makes the veths of one link and returns its emulator spec and
// the router-side packet sockets.
func (tb *Testbed) buildLink(li int, l Link) (emu.LinkSpec, []*os.File, error) {
	spec := emu.LinkSpec{Name: l.Name, Config: l.Config}
	var err error
	if spec.TraceUp, err = loadTrace(l.Config.Up.Trace); err != nil {
		return spec, nil, err
	}
	if spec.TraceDown, err = loadTrace(l.Config.Down.Trace); err != nil {
		return spec, nil, err
	}
	members := append(append([]string(nil), l.A...), l.B...)
	if tb.opts.Direct {
		a, b := tb.hosts[members[0]], tb.hosts[members[1]]
		bIf := tb.ifName(b)
		if err := tb.addVeth(a, li, 0, b.ns, bIf, hostMAC(li, 1)); err != nil {
			return spec, nil, err
		}
		if err := tb.configureHost(b, bIf, li, 1); err != nil {
			return spec, nil, err
		}
		return spec, nil, nil
	}
	var files []*os.File
	for k, name := range members {
		h := tb.hosts[name]
		portName := "p" + strconv.Itoa(li) + "-" + strconv.Itoa(k)
		if err := tb.addVeth(h, li, k, tb.router, portName, portMAC(li, k)); err != nil {
			return spec, files, err
		}
		var f *os.File
		err := inNamespace(tb.router, func() error {
			if err := disableOffloads(portName); err != nil {
				return err
			}
			if err := linkUp(portName); err != nil {
				return err
			}
			var err error
			f, err = packetSocket(portName)
			return err
		})
		if err != nil {
			return spec, files, fmt.Errorf("port %s: %w", portName, err)
		}
		files = append(files, f)
		side := emu.SideA
		if k >= len(l.A) {
			side = emu.SideB
		}
		spec.Ports = append(spec.Ports, emu.PortSpec{Side: side, HostMAC: hostMAC(li, k), Host: name})
	}
	return spec, files, nil
}

func (tb *Testbed) ifName(h *Host) string { return "eth" + strconv.Itoa(len(h.Ifaces)) }

// addVeth creates a veth pair with one end (ethN) in host h and the peer
// directly in peerNS, then configures the host end as the k-th host of link
// li. Both ends are created inside their namespaces, so names never collide
// between runs.
func (tb *Testbed) addVeth(h *Host, li, k int, peerNS netns.NsHandle, peerName string, peerMAC net.HardwareAddr) error {
	ifname := tb.ifName(h)
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: ifname, MTU: tb.opts.MTU, HardwareAddr: hostMAC(li, k), Namespace: netlink.NsFd(int(h.ns))},
		PeerName:         peerName,
		PeerHardwareAddr: peerMAC,
		PeerNamespace:    netlink.NsFd(int(peerNS)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("veth %s/%s: %w", h.Name, ifname, err)
	}
	return tb.configureHost(h, ifname, li, k)
}

// configureHost sets the address and offloads of a host interface and
// brings it up.
func (tb *Testbed) configureHost(h *Host, ifname string, li, k int) error {
	ip := hostIP(tb.first, li, k)
	err := h.Do(func() error {
		if err := disableOffloads(ifname); err != nil {
			return err
		}
		link, err := netlink.LinkByName(ifname)
		if err != nil {
			return err
		}
		if link.Attrs().MTU != tb.opts.MTU {
			if err := netlink.LinkSetMTU(link, tb.opts.MTU); err != nil {
				return err
			}
		}
		addr := &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: linkSubnet(tb.first, li).Mask}}
		if err := netlink.AddrAdd(link, addr); err != nil {
			return fmt.Errorf("address %s: %w", ip, err)
		}
		return netlink.LinkSetUp(link)
	})
	if err != nil {
		return fmt.Errorf("host %s/%s: %w", h.Name, ifname, err)
	}
	h.Ifaces = append(h.Ifaces, Iface{Name: ifname, Link: tb.Topo.Links[li].Name, IP: ip, MAC: hostMAC(li, k)})
	return nil
}

// addNeighbours gives every host a permanent neighbour entry for every other
// host on its links, so that no ARP crosses the emulated link: ARP would add
// an RTT to the first packet and bytes to the counters.
func (tb *Testbed) addNeighbours() error {
	for _, h := range tb.hosts {
		for _, ifc := range h.Ifaces {
			for _, other := range tb.hosts {
				if other == h {
					continue
				}
				for _, oifc := range other.Ifaces {
					if oifc.Link != ifc.Link {
						continue
					}
					err := h.Do(func() error {
						link, err := netlink.LinkByName(ifc.Name)
						if err != nil {
							return err
						}
						return netlink.NeighAdd(&netlink.Neigh{LinkIndex: link.Attrs().Index, IP: oifc.IP, HardwareAddr: oifc.MAC, State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4})
					})
					if err != nil {
						return fmt.Errorf("host %s: neighbour %s: %w", h.Name, oifc.IP, err)
					}
				}
			}
		}
	}
	return nil
}

func linkUp(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(link)
}

func loadTrace(path string) ([]int64, error) {
	if path == "" {
		return nil, nil
	}
	return emu.LoadTrace(path)
}

// Host returns the named host, or nil.
func (tb *Testbed) Host(name string) *Host { return tb.hosts[name] }

// Hosts returns the hosts in topology order.
func (tb *Testbed) Hosts() []*Host {
	out := make([]*Host, 0, len(tb.hosts))
	for _, n := range tb.Topo.Hosts {
		out = append(out, tb.hosts[n])
	}
	return out
}

// Addr returns the address of host to on a link it shares with host from;
// a multi-homed host reaches its peer at the peer's service address,
// over whichever link has the route.
func (tb *Testbed) Addr(from, to string) (net.IP, error) {
	f, t := tb.hosts[from], tb.hosts[to]
	if f == nil || t == nil {
		return nil, fmt.Errorf("testbed: unknown host %q or %q", from, to)
	}
	if m := tb.Topo.MultiHome; m != nil && m.Host == from && m.Peer == to && !tb.opts.Direct {
		return serviceIP(tb.first), nil
	}
	for _, fi := range f.Ifaces {
		for _, ti := range t.Ifaces {
			if fi.Link == ti.Link {
				return ti.IP, nil
			}
		}
	}
	return nil, fmt.Errorf("testbed: %s and %s share no link", from, to)
}

// Emulator returns the running emulator, or nil for a direct testbed.
func (tb *Testbed) Emulator() *emu.Process { return tb.emu }

// onClose registers an undo step; Close runs them in reverse order.
func (tb *Testbed) onClose(f func() error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.closers = append(tb.closers, f)
}

// Close stops the emulator and captures and removes namespaces, veths and
// temp files. It is safe to call more than once and from a signal handler's
// goroutine.
func (tb *Testbed) Close() error {
	tb.mu.Lock()
	if tb.closed {
		tb.mu.Unlock()
		return nil
	}
	tb.closed = true
	closers := tb.closers
	tb.closers = nil
	tb.mu.Unlock()
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		if err := closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// AddNeighbour adds a permanent neighbour entry (ip at mac) on the host's
// interface ifname. Calibration uses it to aim a flood at a MAC that no host
// owns: the emulator forwards such frames and the receiving kernel discards
// them at once as not addressed to it, so the measurement costs the receiver
// nothing.
func (h *Host) AddNeighbour(ifname string, ip net.IP, mac net.HardwareAddr) error {
	return h.Do(func() error {
		link, err := netlink.LinkByName(ifname)
		if err != nil {
			return err
		}
		return netlink.NeighAdd(&netlink.Neigh{LinkIndex: link.Attrs().Index, IP: ip, HardwareAddr: mac, State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4})
	})
}

// Run runs an external command in the host's network namespace and waits
// for it. With resolvConf set, the command sees that file as
// /etc/resolv.conf (bind-mounted in a private mount namespace, so the
// machine's own is untouched): its resolver then asks the name server the
// file names, as a real client on that host would. The command dies with
// tlab (Pdeathsig).
func (h *Host) Run(cmd *exec.Cmd, resolvConf string) error {
	if resolvConf != "" {
		args := append([]string{"--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolvConf}, cmd.Args...)
		path, err := exec.LookPath("unshare")
		if err != nil {
			return fmt.Errorf("running %s with its own resolv.conf: %w", cmd.Args[0], err)
		}
		cmd.Path, cmd.Args = path, append([]string{"unshare"}, args...)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return h.Do(func() error {
		// The child inherits this thread's namespace; Pdeathsig fires
		// when this (locked) thread exits, after the command has.
		if h.cpu != nil {
			if err := h.cpu.prepare(cmd); err != nil {
				return err
			}
		}
		return cmd.Run()
	})
}

// Process is a long-running command started in a host (a broker).
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	stop sync.Once
}

// Start starts a long-running command in the host's namespace and returns
// at once. The command cannot outlive tlab: it gets SIGKILL when the thread
// that started it exits (Pdeathsig), and that thread lives, locked in the
// namespace, until the command ends; it is recorded for `tlab cleanup`, and
// the testbed's Close stops it if nothing did before.
func (h *Host) Start(cmd *exec.Cmd) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p := &Process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread stays in the namespace and dies
		// with this goroutine, after the command has ended.
		runtime.LockOSThread()
		if err := netns.Set(h.ns); err != nil {
			started <- fmt.Errorf("setns: %w", err)
			return
		}
		if h.cpu != nil {
			if err := h.cpu.prepare(cmd); err != nil {
				started <- err
				return
			}
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", cmd.Path, h.Name, err)
	}
	if h.tb != nil {
		if h.tb.run != nil {
			h.tb.run.addPID(cmd.Process.Pid)
		}
		h.tb.onClose(p.Stop)
	}
	return p, nil
}

// CPUUsage is the CPU time the host's processes have used, from its
// cgroup's cpu.stat; an error when the host has no CPU limit.
func (h *Host) CPUUsage() (time.Duration, error) {
	if h.cpu == nil {
		return 0, fmt.Errorf("host %s has no cpu limit, so no cgroup", h.Name)
	}
	return h.cpu.usage()
}

// Done is closed when the command has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the command ended (valid once Done is closed).
func (p *Process) Err() error { return p.err }

// PID is the command's process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop asks the command to end (SIGTERM), kills it after two seconds, and
// waits for it. It is safe to call more than once.
func (p *Process) Stop() error {
	p.stop.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return nil
}

// StartProcess is Start in the form protocols use (proto.ProcessHost).
func (h *Host) StartProcess(cmd *exec.Cmd) (stop func() error, done <-chan struct{}, err error) {
	p, err := h.Start(cmd)
	if err != nil {
		return nil, nil, err
	}
	return p.Stop, p.Done(), nil
}
