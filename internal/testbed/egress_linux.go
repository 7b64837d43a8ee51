package testbed

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// An egress takes a testbed's traffic for real addresses (Options.Reach)
// out of the machine, so that an emulated link can sit in front of a real
// path: "my network, plus 1 % loss". The gateway host gets a veth into the
// namespace tlab runs in (the machine's own, "outside"); the testbed's
// other hosts route everything beyond their links to it; the gateway
// masquerades it to its outside address, and outside masquerades that
// again to whatever address it leaves by. Two translations, so that
// neither the testbed's subnets nor the gateway's reach the real network,
// and concurrent runs (each with the same 198.18.x subnets) never meet.
//
// The outside namespace has to forward for this. Linux decides that per
// input interface, so tlab turns forwarding on for its own veth and for
// the interfaces that lead to Reach only, and only where it was off; it
// then drops, in its own nftables table, whatever else those interfaces
// would now forward, so that the machine does not become a router for
// its neighbours. Nothing from outside can open a connection into the
// testbed: the gateway and the outside table drop what is not a reply.
// Everything is undone when the testbed closes, and by tlab cleanup after
// a kill (the run record keeps what was changed, and forwarding is put
// back only when no other live run still needs it).

// egressRecord is what an egress changed outside the testbed's own
// namespaces, kept in the run record.
type egressRecord struct {
	// NetNS is the inode of the namespace the egress leaves by: cleanup
	// acts only from that namespace.
	NetNS uint64 `json:"netns"`
	// Table is the nftables table of the outside namespace.
	Table string `json:"nft_table"`
	// Veth is the outside end of the gateway's veth.
	Veth string `json:"veth"`
	// Forwarding maps each outside interface whose forwarding tlab turned
	// on to the value to put back when no run needs it any more.
	Forwarding map[string]string `json:"forwarding,omitempty"`
	// Gateway is the gateway's outside address, the one destination
	// that what comes in by a guarded interface may be forwarded to.
	Gateway string `json:"gateway,omitempty"`
	// Guards are the policy-routing rules that keep each interface of
	// Forwarding from forwarding anything else (guardRules).
	Guards []guardRule `json:"guards,omitempty"`
}

// A guardRule is a pair of routing-policy rules on one interface whose
// forwarding an egress turned on: what comes in by it for the gateway
// is routed (at guardAllowPriority), everything else not for this
// machine itself is dropped (a blackhole at Priority). They live in the
// kernel's rule list, not in nftables: a ruleset flush or a firewall
// reload leaves them, and a killed run leaves them too, so the machine
// never forwards a neighbour's packets, whatever became of the table.
type guardRule struct {
	Iface    string `json:"iface"`
	Priority int    `json:"priority"`
}

// Guard rule priorities: after the local table's (0), before main's
// (32766). Every run's allow rule comes before every run's blackhole, so
// that concurrent runs never drop each other's replies.
const (
	guardAllowPriority = 3000
	guardBlockFirst    = 3001
	guardBlockLast     = 3999
)

// gatewayIface is the gateway's interface towards the outside namespace.
const gatewayIface = "up0"

// Egress routes every other host's traffic for addresses beyond the
// testbed through host gateway and out of the namespace tlab runs in
// (see above). The testbed must have been built with Options.Reach, the
// addresses its hosts will reach. Its rules go in through netlink (the
// kernel's nf_tables; no nft binary).
func (tb *Testbed) Egress(gateway string) error {
	gw := tb.hosts[gateway]
	if gw == nil {
		return fmt.Errorf("testbed: egress: no host %q", gateway)
	}
	if len(tb.opts.Reach) == 0 {
		return errors.New("testbed: egress: the testbed was built without Options.Reach")
	}
	unlock, err := lockEgress(filepath.Dir(tb.run.path))
	if err != nil {
		return err
	}
	defer unlock()
	ns, err := currentNetNS()
	if err != nil {
		return err
	}
	outs, err := routeInterfaces(tb.opts.Reach)
	if err != nil {
		return err
	}
	subnet, err := freeEgressSubnet()
	if err != nil {
		return err
	}
	suffix := tb.ID[strings.LastIndexByte(tb.ID, '-')+1:]
	outsideIP, gatewayIP := addrIn(subnet, 1), addrIn(subnet, 2)
	rec := &egressRecord{NetNS: ns, Table: "tlab_" + suffix, Veth: "tlx" + suffix, Forwarding: map[string]string{}, Gateway: gatewayIP.String()}

	// Recorded before anything is made, so that a kill from here on leaves
	// what tlab cleanup undoes.
	tb.run.mu.Lock()
	tb.run.Egress = rec
	err = tb.run.save()
	tb.run.mu.Unlock()
	if err != nil {
		return err
	}
	// Something that outlives this process undoes the egress should it
	// be killed (without it, the guards keep the machine safe until tlab
	// cleanup). Its pipe is closed after closeEgress has run (closers run
	// in reverse), so it finds the egress undone.
	if guardian, err := startGuardian(tb.run.path); err == nil {
		tb.onClose(guardian.Close)
	}
	tb.onClose(tb.closeEgress)

	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: rec.Veth, MTU: tb.opts.MTU},
		PeerName:      gatewayIface,
		PeerNamespace: netlink.NsFd(int(gw.ns)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("egress veth %s: %w", rec.Veth, err)
	}
	if err := setUpAddr(rec.Veth, outsideIP, subnet.Mask); err != nil {
		return fmt.Errorf("egress %s: %w", rec.Veth, err)
	}
	// Forwarded packets must arrive whole at the emulator: a GRO
	// super-frame from the machine's own interface would be one 64 KB
	// "packet" to the link.
	if err := disableOffloads(rec.Veth); err != nil {
		return err
	}
	err = gw.Do(func() error {
		if err := setUpAddr(gatewayIface, gatewayIP, subnet.Mask); err != nil {
			return err
		}
		if err := disableOffloads(gatewayIface); err != nil {
			return err
		}
		if err := writeSysctl("net/ipv4/ip_forward", "1"); err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{Gw: outsideIP})
	})
	if err != nil {
		return fmt.Errorf("egress gateway %s: %w", gateway, err)
	}
	if err := gatewayRuleset().apply(int(gw.ns)); err != nil {
		return fmt.Errorf("egress gateway %s: %w", gateway, err)
	}
	if err := tb.routeVia(gw); err != nil {
		return err
	}

	// Outside: forwarding on the veth and on the ways out, the two rules.
	if err := writeSysctl("net/ipv4/conf/"+rec.Veth+"/forwarding", "1"); err != nil {
		return fmt.Errorf("egress: forwarding on %s: %w", rec.Veth, err)
	}
	held := liveForwarding(ns, tb.ID)
	for _, out := range outs {
		was, err := readSysctl("net/ipv4/conf/" + out + "/forwarding")
		if err != nil {
			return fmt.Errorf("egress: forwarding on %s: %w", out, err)
		}
		if prev, ok := held[out]; ok {
			was = prev // another run turned it on: put back what it found
		} else if was != "0" {
			continue // the machine forwards there already: not tlab's to change
		}
		prio, err := freeGuardPriority(out)
		if err != nil {
			return err
		}
		rec.Forwarding[out] = was
		rec.Guards = append(rec.Guards, guardRule{Iface: out, Priority: prio})
		tb.run.mu.Lock()
		err = tb.run.save()
		tb.run.mu.Unlock()
		if err != nil {
			return err
		}
		// The guard first: forwarding is never on without it.
		if err := addGuard(guardRule{Iface: out, Priority: prio}, gatewayIP); err != nil {
			return err
		}
		if err := writeSysctl("net/ipv4/conf/"+out+"/forwarding", "1"); err != nil {
			return fmt.Errorf("egress: forwarding on %s: %w", out, err)
		}
	}
	rules := outsideRuleset(rec, gatewayIP)
	if err := rules.apply(-1); err != nil {
		return fmt.Errorf("egress: %w", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchEgress(rec, gatewayIP, func() error { return rules.apply(-1) }, stop)
	}()
	// Registered after closeEgress, so run before it: the watchdog must
	// not put back what the close takes away.
	tb.onClose(func() error { close(stop); <-done; return nil })
	return nil
}

// egressWatchInterval is how often a live egress checks that its table
// and guards are still there.
const egressWatchInterval = time.Second

// watchEgress puts back rec's nftables table (with restore) and its
// guard rules whenever something removed them (a ruleset flush, a
// firewall reload), until stop closes. It runs in the namespace the
// egress leaves by (the process's own: goroutines not locked to a thread
// run there). The guards alone keep the machine from forwarding for its
// neighbours; the table also keeps the testbed's traffic masqueraded and
// the far side out.
func watchEgress(rec *egressRecord, gatewayIP net.IP, restore func() error, stop <-chan struct{}) {
	t := time.NewTicker(egressWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		for _, g := range rec.Guards {
			if !guardPresent(g, gatewayIP) {
				addGuard(g, gatewayIP) // best effort: retried on the next tick
			}
		}
		if !tablePresent(rec.Table) {
			restore()
		}
	}
}

// tablePresent tells whether the ip table name exists (an error counts
// as absent, so that the watchdog tries again).
func tablePresent(name string) bool {
	conn, err := nftables.New()
	if err != nil {
		return false
	}
	_, err = conn.ListTableOfFamily(name, nftables.TableFamilyIPv4)
	return err == nil
}

// guardRules are g's two rules: route what comes in by g.Iface for the
// gateway, drop everything else not for this machine.
func guardRules(g guardRule, gatewayIP net.IP) (allow, block *netlink.Rule) {
	allow = netlink.NewRule()
	allow.Priority = guardAllowPriority
	allow.IifName = g.Iface
	allow.Dst = &net.IPNet{IP: gatewayIP.To4(), Mask: net.CIDRMask(32, 32)}
	allow.Table = unix.RT_TABLE_MAIN
	allow.Family = unix.AF_INET
	block = netlink.NewRule()
	block.Priority = g.Priority
	block.IifName = g.Iface
	block.Type = unix.RTN_BLACKHOLE
	block.Family = unix.AF_INET
	return allow, block
}

// addGuard adds g's rules, the allow rule first.
func addGuard(g guardRule, gatewayIP net.IP) error {
	allow, block := guardRules(g, gatewayIP)
	if err := netlink.RuleAdd(allow); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("egress: routing rule for %s on %s: %w", gatewayIP, g.Iface, err)
	}
	if err := netlink.RuleAdd(block); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("egress: routing rule dropping what %s would forward: %w", g.Iface, err)
	}
	return nil
}

// delGuard removes g's rules, the blackhole last.
func delGuard(g guardRule, gatewayIP net.IP) error {
	allow, block := guardRules(g, gatewayIP)
	var errs []error
	if err := netlink.RuleDel(allow); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("routing rule for %s on %s: %w", gatewayIP, g.Iface, err))
	}
	if err := netlink.RuleDel(block); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("blackhole rule on %s: %w", g.Iface, err))
	}
	return errors.Join(errs...)
}

// guardPresent tells whether both of g's rules exist.
func guardPresent(g guardRule, gatewayIP net.IP) bool {
	rules, err := netlink.RuleListFiltered(unix.AF_INET, &netlink.Rule{Priority: g.Priority}, netlink.RT_FILTER_PRIORITY)
	if err != nil || !slices.ContainsFunc(rules, func(r netlink.Rule) bool { return r.IifName == g.Iface && r.Type == unix.RTN_BLACKHOLE }) {
		return false
	}
	rules, err = netlink.RuleListFiltered(unix.AF_INET, &netlink.Rule{Priority: guardAllowPriority}, netlink.RT_FILTER_PRIORITY)
	return err == nil && slices.ContainsFunc(rules, func(r netlink.Rule) bool {
		return r.IifName == g.Iface && r.Dst != nil && r.Dst.IP.Equal(gatewayIP)
	})
}

// freeGuardPriority picks a blackhole priority no rule of iface has
// (called under the egress lock).
func freeGuardPriority(iface string) (int, error) {
	rules, err := netlink.RuleList(unix.AF_INET)
	if err != nil {
		return 0, fmt.Errorf("egress: routing rules: %w", err)
	}
	for p := guardBlockFirst; p <= guardBlockLast; p++ {
		if !slices.ContainsFunc(rules, func(r netlink.Rule) bool { return r.Priority == p && r.IifName == iface }) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("egress: every guard priority on %s is taken", iface)
}

// routeVia gives every host that shares a link with gw a default route
// through it.
func (tb *Testbed) routeVia(gw *Host) error {
	for _, h := range tb.hosts {
		if h == gw {
			continue
		}
		for _, ifc := range h.Ifaces {
			var via net.IP
			for _, g := range gw.Ifaces {
				if g.Link == ifc.Link {
					via = g.IP
				}
			}
			if via == nil {
				continue
			}
			if err := h.Do(func() error { return netlink.RouteAdd(&netlink.Route{Gw: via}) }); err != nil {
				return fmt.Errorf("host %s: default route via %s: %w", h.Name, via, err)
			}
			break
		}
	}
	return nil
}

// closeEgress undoes what Egress did outside the testbed's namespaces
// (the veth goes with the gateway's namespace).
func (tb *Testbed) closeEgress() error {
	unlock, err := lockEgress(filepath.Dir(tb.run.path))
	if err != nil {
		return err
	}
	defer unlock()
	tb.run.mu.Lock()
	rec := tb.run.Egress
	tb.run.mu.Unlock()
	if rec == nil {
		return nil
	}
	err = undoEgress(rec, tb.ID)
	if l, lerr := netlink.LinkByName(rec.Veth); lerr == nil {
		err = errors.Join(err, netlink.LinkDel(l))
	}
	// Undone: from now on this run holds no forwarding, or another run
	// closing before this record goes would leave it on for both.
	tb.run.mu.Lock()
	tb.run.Egress = nil
	serr := tb.run.save()
	tb.run.mu.Unlock()
	return errors.Join(err, serr)
}

// undoEgress deletes rec's table and puts forwarding back where no other
// live run holds it. It runs in the namespace rec names, under the lock.
// rec may come from a dead run's record: the table is deleted by name
// through netlink (no text any tool parses), and forwarding is put back
// only on an interface that exists, through a root at /proc/sys.
func undoEgress(rec *egressRecord, id string) error {
	var errs []error
	if err := deleteTable(rec.Table); err != nil {
		errs = append(errs, err)
	}
	held := liveForwarding(rec.NetNS, id)
	for iface, was := range rec.Forwarding {
		if _, ok := held[iface]; ok {
			continue // another run still forwards there, and will put it back
		}
		if was != "0" && was != "1" {
			errs = append(errs, fmt.Errorf("forwarding on %s: %q is not 0 or 1", iface, was))
			continue
		}
		if !existingIfname(iface) {
			continue // gone, and its forwarding with it
		}
		if err := writeSysctl("net/ipv4/conf/"+iface+"/forwarding", was); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("forwarding on %s: %w", iface, err))
		}
	}
	// The guards go last, once forwarding is back: a guard whose
	// forwarding could not be put back stays.
	if gw := net.ParseIP(rec.Gateway).To4(); gw != nil {
		for _, g := range rec.Guards {
			if errors.Join(errs...) != nil {
				break
			}
			if err := delGuard(g, gw); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// deleteTable deletes tlab's nftables table name (family ip) of the
// calling thread's namespace; a table that is gone is no error.
func deleteTable(name string) error {
	if !tableName.MatchString(name) {
		return fmt.Errorf("nftables table %q is not tlab's", name)
	}
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	conn.DelTable(&nftables.Table{Name: name, Family: nftables.TableFamilyIPv4})
	if err := conn.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("nftables: delete table %s: %w", name, err)
	}
	return nil
}

// liveForwarding returns, for the live runs other than id whose egress
// leaves by namespace ns, each interface whose forwarding one of them
// turned on, and what it was before.
func liveForwarding(ns uint64, id string) map[string]string {
	held := map[string]string{}
	for _, r := range readRecords() {
		if r.ID == id || r.Egress == nil || r.Egress.NetNS != ns || !r.Owner.alive() {
			continue
		}
		for iface, was := range r.Egress.Forwarding {
			held[iface] = was
		}
	}
	return held
}

// lockEgress serialises egresses (their subnets, forwarding and its
// holders) across processes.
func lockEgress(dir string) (func(), error) {
	// dir is a checked registry; the lock is opened without following a
	// link all the same.
	f, err := openLockFile(dir, "egress.lock")
	if err != nil {
		return nil, fmt.Errorf("egress lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("egress lock: %w", err)
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}

// currentNetNS is the inode of this process's network namespace.
func currentNetNS() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &st); err != nil {
		return 0, fmt.Errorf("network namespace: %w", err)
	}
	return st.Ino, nil
}

// routeInterfaces names the interfaces by which this namespace reaches
// each address.
func routeInterfaces(ips []net.IP) ([]string, error) {
	var names []string
	for _, ip := range ips {
		routes, err := netlink.RouteGet(ip)
		if err != nil || len(routes) == 0 {
			return nil, fmt.Errorf("egress: no route to %s from this machine: %w", ip, err)
		}
		l, err := netlink.LinkByIndex(routes[0].LinkIndex)
		if err != nil {
			return nil, fmt.Errorf("egress: the interface towards %s: %w", ip, err)
		}
		name := l.Attrs().Name
		if name == "lo" {
			return nil, fmt.Errorf("egress: %s is this machine's own address: nothing to route", ip)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, nil
}

// freeEgressSubnet picks a /30 of 198.19.0.0/16 (the other half of RFC
// 2544's benchmarking range, beside the links' 198.18) that no address
// of this namespace is in (called under the lock, so two runs never pick
// the same one).
func freeEgressSubnet() (*net.IPNet, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("egress: addresses: %w", err)
	}
	for i := 0; i < 1<<14; i++ {
		n := &net.IPNet{IP: net.IPv4(198, 19, byte(i>>6), byte(i&63)<<2).To4(), Mask: net.CIDRMask(30, 32)}
		taken := false
		for _, a := range addrs {
			if n.Contains(a.IP) || a.IPNet.Contains(n.IP) {
				taken = true
				break
			}
		}
		if !taken {
			return n, nil
		}
	}
	return nil, errors.New("egress: every /30 of 198.19.0.0/16 is in use")
}

// addrIn is the n-th address of subnet.
func addrIn(subnet *net.IPNet, n byte) net.IP {
	ip := append(net.IP(nil), subnet.IP.To4()...)
	ip[3] += n
	return ip
}

// setUpAddr gives ifname ip/mask and brings it up, in the calling
// thread's namespace.
func setUpAddr(ifname string, ip net.IP, mask net.IPMask) error {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		return err
	}
	if err := netlink.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: ip, Mask: mask}}); err != nil {
		return fmt.Errorf("address %s: %w", ip, err)
	}
	return netlink.LinkSetUp(l)
}

// cleanupEgress undoes a dead run's egress, from the namespace it left
// by.
func cleanupEgress(dir string, r *runRecord) error {
	ns, err := currentNetNS()
	if err != nil {
		return err
	}
	if ns != r.Egress.NetNS {
		return fmt.Errorf("its egress left by another network namespace (inode %d): run tlab cleanup there", r.Egress.NetNS)
	}
	unlock, err := lockEgress(dir)
	if err != nil {
		return err
	}
	defer unlock()
	return undoEgress(r.Egress, r.ID)
}
