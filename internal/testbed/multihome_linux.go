package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"tlab/internal/emu"
	"tlab/internal/units"
)

// tableBase numbers the multi-homed host's per-link routing tables
// (tableBase+i for its i-th link) and their rules' priorities.
const tableBase = 100

// multiHomeLink is one of the multi-homed host's links as built.
type multiHomeLink struct {
	name     string
	ifc      Iface  // the host's interface on it
	peerIP   net.IP // the peer's address on it: the next hop
	peerIf   string // the peer's interface on it
	linkIdx  int
	baseLoss [2]float64 // the link's own loss rate, up and down
}

// setupMultiHome gives the peer its service address and the host its
// routes (the main table through the first link, a table per link chosen
// by source address), turns off reverse-path filtering in both (answers
// from the service address arrive on any link), and sets up MPTCP's
// in-kernel path manager: an endpoint per host address, two subflows.
func (tb *Testbed) setupMultiHome() error {
	m := tb.Topo.MultiHome
	if m == nil {
		return nil
	}
	svc := serviceIP(tb.first)
	for _, ip := range tb.opts.Reach {
		if ip.Equal(svc) {
			return fmt.Errorf("multi-home: the service address %s is an address the testbed must reach", svc)
		}
	}
	host, peer := tb.hosts[m.Host], tb.hosts[m.Peer]
	links, err := tb.multiHomeLinks()
	if err != nil {
		return err
	}
	err = peer.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.AddrAdd(lo, &netlink.Addr{IPNet: &net.IPNet{IP: svc, Mask: net.CIDRMask(32, 32)}}); err != nil {
			return fmt.Errorf("service address %s: %w", svc, err)
		}
		if err := noReversePathFilter(peer); err != nil {
			return err
		}
		// The peer answers each of the host's addresses from the
		// service address, over that address's link: a socket that
		// connects to the host without binding (a UDP server
		// connecting to its first client) takes the service address
		// as its own, the one the host sends to, so that the host's
		// next datagrams still reach it.
		for _, l := range links {
			ifc, err := netlink.LinkByName(l.peerIf)
			if err != nil {
				return err
			}
			r := &netlink.Route{Dst: &net.IPNet{IP: l.ifc.IP, Mask: net.CIDRMask(32, 32)}, LinkIndex: ifc.Attrs().Index, Src: svc, Scope: netlink.SCOPE_LINK}
			if err := netlink.RouteAdd(r); err != nil {
				return fmt.Errorf("route to %s from %s: %w", l.ifc.IP, svc, err)
			}
		}
		return mptcpLimits()
	})
	if err != nil {
		return fmt.Errorf("multi-home: peer %s: %w", peer.Name, err)
	}
	err = host.Do(func() error {
		if err := noReversePathFilter(host); err != nil {
			return err
		}
		for i, l := range links {
			table := tableBase + i
			r := serviceRoute(svc, l)
			r.Table = table
			if err := netlink.RouteAdd(&r); err != nil {
				return fmt.Errorf("route to %s in table %d: %w", svc, table, err)
			}
			rule := netlink.NewRule()
			rule.Src = &net.IPNet{IP: l.ifc.IP, Mask: net.CIDRMask(32, 32)}
			rule.Table, rule.Priority = table, tableBase*10+i
			if err := netlink.RuleAdd(rule); err != nil {
				return fmt.Errorf("rule from %s: %w", l.ifc.IP, err)
			}
		}
		main := serviceRoute(svc, links[0])
		if err := netlink.RouteAdd(&main); err != nil {
			return fmt.Errorf("route to %s: %w", svc, err)
		}
		if err := mptcpLimits(); err != nil {
			return err
		}
		for i, l := range links {
			if err := mptcpEndpoint(true, i, l); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("multi-home: host %s: %w", host.Name, err)
	}
	return nil
}

// serviceRoute is the route to the peer's service address over link l.
func serviceRoute(svc net.IP, l multiHomeLink) netlink.Route {
	return netlink.Route{Dst: &net.IPNet{IP: svc, Mask: net.CIDRMask(32, 32)}, Gw: l.peerIP, Src: l.ifc.IP, LinkIndex: l.linkIdx}
}

// mptcpEndpoint adds (or deletes) the MPTCP endpoint of the host's i-th
// link (run inside the host): its address, as a subflow endpoint bound
// to its interface, with id i+1. Adding it gives every MPTCP connection
// of the host a subflow from that address; deleting it closes them.
func mptcpEndpoint(add bool, i int, l multiHomeLink) error {
	id := strconv.Itoa(i + 1)
	args := []string{"mptcp", "endpoint", "delete", "id", id}
	if add {
		args = []string{"mptcp", "endpoint", "add", l.ifc.IP.String(), "dev", l.ifc.Name, "id", id, "subflow"}
	}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("mptcp endpoint %s (%s): %v: %s", l.ifc.IP, args[2], err, out)
	}
	return nil
}

// mptcpLimits lets MPTCP's in-kernel path manager of this namespace open
// a subflow over each of two links and accept two announced addresses.
func mptcpLimits() error {
	if out, err := exec.Command("ip", "mptcp", "limits", "set", "subflow", "2", "add_addr_accepted", "2").CombinedOutput(); err != nil {
		return fmt.Errorf("mptcp limits: %v: %s", err, out)
	}
	return nil
}

// noReversePathFilter turns off reverse-path filtering on every
// interface of h (run inside h): a packet from the service address may
// come over a link other than the one the main table names.
func noReversePathFilter(h *Host) error {
	names := []string{"all", "default"}
	for _, ifc := range h.Ifaces {
		names = append(names, ifc.Name)
	}
	for _, n := range names {
		if err := writeSysctl("net/ipv4/conf/"+n+"/rp_filter", "0"); err != nil {
			return fmt.Errorf("rp_filter %s: %w", n, err)
		}
	}
	return nil
}

// multiHomeLinks returns the host's links to its peer as built, in
// topology order.
func (tb *Testbed) multiHomeLinks() ([]multiHomeLink, error) {
	m := tb.Topo.MultiHome
	host, peer := tb.hosts[m.Host], tb.hosts[m.Peer]
	var out []multiHomeLink
	for _, name := range m.links(tb.Topo) {
		l := multiHomeLink{name: name}
		for _, ifc := range host.Ifaces {
			if ifc.Link == name {
				l.ifc = ifc
			}
		}
		for _, ifc := range peer.Ifaces {
			if ifc.Link == name {
				l.peerIP, l.peerIf = ifc.IP, ifc.Name
			}
		}
		if l.ifc.Name == "" || l.peerIP == nil {
			return nil, fmt.Errorf("multi-home: link %s has no interface of %s or %s", name, m.Host, m.Peer)
		}
		err := host.Do(func() error {
			link, err := netlink.LinkByName(l.ifc.Name)
			if err == nil {
				l.linkIdx = link.Attrs().Index
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("multi-home: %s/%s: %w", m.Host, l.ifc.Name, err)
		}
		for _, tl := range tb.Topo.Links {
			if tl.Name == name {
				l.baseLoss = [2]float64{bernoulliRate(tl.Config.Up), bernoulliRate(tl.Config.Down)}
			}
		}
		out = append(out, l)
	}
	return out, nil
}

func bernoulliRate(d emu.DirectionConfig) float64 {
	if d.Loss.Model == emu.LossBernoulli {
		return float64(d.Loss.Rate)
	}
	return 0
}

// startHandovers runs the multi-homed host's handovers until they are
// done or the testbed closes. Their times are on the emulator's link
// clock, as a timeline's steps: each link's state at the start is sent
// to the emulator first (a "handover" event with its own loss rate),
// whose reply says where the link clock stands. Each change goes to the
// emulator as a change of both of the link's directions (its loss: 100 %
// down, its own rate up) and is recorded there with the link clock's
// time (source "handover", in link-events.csv); a link that comes up
// takes the host's route to the service address at once after.
func (tb *Testbed) startHandovers() error {
	m := tb.Topo.MultiHome
	if m == nil || len(m.Handovers) == 0 || tb.emu == nil {
		return nil
	}
	links, err := tb.multiHomeLinks()
	if err != nil {
		return err
	}
	var clock time.Duration // the link clock at wall time now
	var now time.Time
	for _, l := range links {
		for i, dir := range []string{"up", "down"} {
			loss := units.Ratio(l.baseLoss[i])
			at, err := tb.emu.SetAs(emu.EventHandover, l.name, dir, emu.TimelineStep{Loss: &loss})
			if err != nil {
				return fmt.Errorf("multi-home: link %s %s at the start: %w", l.name, dir, err)
			}
			if now.IsZero() {
				clock, now = at, time.Now()
			}
		}
	}
	start := now.Add(-clock) // wall time of the link clock's zero
	tb.mu.Lock()
	tb.linkZero = start
	tb.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = tb.runHandovers(ctx, start, links, m.actions())
	}()
	tb.onClose(func() error {
		cancel()
		wg.Wait() // runErr is written before Done
		return runErr
	})
	return nil
}

// runHandovers applies actions at their times on the link clock, whose
// zero was start.
//
// MPTCP's endpoints follow the host's view of its links, as a device's
// network manager adds and removes an interface's address: when a link
// comes up with the route, its endpoint is there (added again if it had
// gone: the kernel's path manager then opens a subflow from it for every
// open connection) and the endpoints of the links that are down go (their
// subflows close); a link given up after an overlap loses its endpoint
// as it goes down. In a break before make the host notices the loss only
// at the end of the outage, with the route.
func (tb *Testbed) runHandovers(ctx context.Context, start time.Time, links []multiHomeLink, actions []handoverAction) error {
	index := map[string]int{}
	for i, l := range links {
		index[l.name] = i
	}
	host := tb.hosts[tb.Topo.MultiHome.Host]
	svc := serviceIP(tb.first)
	down := make([]bool, len(links))     // the link is down
	endpoint := make([]bool, len(links)) // the link's MPTCP endpoint is there
	for i := range endpoint {
		endpoint[i] = true
	}
	active := 0 // the link with the route
	for _, a := range actions {
		t := time.NewTimer(time.Until(start.Add(a.at)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		i := index[a.link]
		l := links[i]
		for k, dir := range []string{"up", "down"} {
			loss := units.Ratio(1)
			if a.up {
				loss = units.Ratio(l.baseLoss[k])
			}
			if _, err := tb.emu.SetAs(emu.EventHandover, l.name, dir, emu.TimelineStep{Loss: &loss}); err != nil {
				return fmt.Errorf("handover at %v: link %s %s: %w", a.at, l.name, dir, err)
			}
		}
		down[i] = !a.up
		err := host.Do(func() error {
			if !a.up {
				if i != active && endpoint[i] {
					endpoint[i] = false
					return mptcpEndpoint(false, i, l)
				}
				return nil
			}
			r := serviceRoute(svc, l)
			if err := netlink.RouteReplace(&r); err != nil {
				return fmt.Errorf("route to %s over %s: %w", svc, l.name, err)
			}
			active = i
			for k := range links {
				if down[k] && endpoint[k] {
					endpoint[k] = false
					if err := mptcpEndpoint(false, k, links[k]); err != nil {
						return err
					}
				}
			}
			if !endpoint[i] {
				endpoint[i] = true
				return mptcpEndpoint(true, i, l)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("handover at %v: %w", a.at, err)
		}
	}
	return nil
}

// LinkClockZero is the wall time of the emulator's link clock's zero, as
// a multi-homed host's handovers found it when they started (zero
// without handovers): what a handover's at counts from.
func (tb *Testbed) LinkClockZero() time.Time {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.linkZero
}

// ActiveLink returns the link the multi-homed host's route to its peer's
// service address uses now, read from the host's main table.
func (tb *Testbed) ActiveLink() (string, error) {
	m := tb.Topo.MultiHome
	if m == nil {
		return "", ErrNotMultiHomed
	}
	host := tb.hosts[m.Host]
	var idx int
	err := host.Do(func() error {
		routes, err := netlink.RouteGet(serviceIP(tb.first))
		if err != nil {
			return err
		}
		if len(routes) == 0 {
			return errors.New("no route")
		}
		idx = routes[0].LinkIndex
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("testbed: route to the service address: %w", err)
	}
	links, err := tb.multiHomeLinks()
	if err != nil {
		return "", err
	}
	for _, l := range links {
		if l.linkIdx == idx {
			return l.name, nil
		}
	}
	return "", fmt.Errorf("testbed: the route to the service address uses interface %d, on none of the host's links", idx)
}
