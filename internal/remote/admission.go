package remote

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Who may wait in the agent's TLS handshake, as sshd's MaxStartups
// decides who may wait to log in: a connection takes a pending place when
// it is accepted and gives it back when its peer proves to be paired (or
// leaves). A stranger's connections, however many addresses it has,
// cannot lock out the controllers that paired before:
//
//   - places are counted per source network (an IPv4 /24, an IPv6 /64),
//     not per address: one host or site that owns many addresses is one
//     network (Limits.MaxPendingPerIP);
//   - past half of Limits.MaxPending, a new connection is closed at
//     random, with probability earlyDropRate at half and rising in a
//     line to 1 at MaxPending (sshd's "start:rate:full");
//   - a connection whose first byte (a ClientHello's record) does not
//     come within helloWait is closed: a silent one holds its place for
//     that long only;
//   - addresses that paired before (the pairing's address, kept in the
//     controllers file, and any address a paired controller connected
//     from while the agent runs) have keptPlaces of their own, beyond
//     the strangers' reach.
//
// Before the handshake the address is all the agent knows of a peer: a
// controller's identity comes inside TLS.
const (
	helloWait     = 3 * time.Second
	earlyDropRate = 0.3
	keptPlaces    = 8
	// tlsHandshakeRecord is a TLS record's first byte when it carries
	// a handshake message (RFC 8446, 5.1: ContentType handshake(22)).
	tlsHandshakeRecord = 0x16
)

// place is a pending place taken: a kept one, or one of network's.
type place struct {
	kept    bool
	network netip.Prefix
}

// networkOf is ip's network for counting: its /24 (IPv4) or /64 (IPv6).
func networkOf(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap()
	bits := 64
	if ip.Is4() {
		bits = 24
	}
	p, err := ip.Prefix(bits)
	if err != nil {
		return netip.Prefix{} // not an IP address: one network of its own
	}
	return p
}

// admit takes a pending place for a connection from ip, or says why not.
func (a *Agent) admit(ip netip.Addr) (place, error) {
	ip = ip.Unmap()
	a.pendingMu.Lock()
	defer a.pendingMu.Unlock()
	if a.known[ip] && a.kept < keptPlaces {
		a.kept++
		return place{kept: true}, nil
	}
	network := networkOf(ip)
	full := a.Limits.MaxPending
	if a.pending >= full {
		return place{}, fmt.Errorf("%d connections are not yet paired (the limit)", a.pending)
	}
	if a.pendingByNetwork[network] >= a.Limits.MaxPendingPerIP {
		return place{}, fmt.Errorf("%d connections from %v are not yet paired (the limit per network)", a.pendingByNetwork[network], network)
	}
	if start := full / 2; a.pending >= start {
		p := earlyDropRate + (1-earlyDropRate)*float64(a.pending-start)/float64(full-start)
		if a.earlyDrop() < p {
			return place{}, fmt.Errorf("%d connections are not yet paired: closed at random (%.0f %% at that many)", a.pending, 100*p)
		}
	}
	a.pending++
	a.pendingByNetwork[network]++
	return place{network: network}, nil
}

// release gives back a pending place.
func (a *Agent) release(p place) {
	a.pendingMu.Lock()
	defer a.pendingMu.Unlock()
	if p.kept {
		a.kept--
		return
	}
	a.pending--
	if a.pendingByNetwork[p.network]--; a.pendingByNetwork[p.network] <= 0 {
		delete(a.pendingByNetwork, p.network)
	}
}

// remember keeps ip as an address a paired controller connected from.
func (a *Agent) remember(ip netip.Addr) {
	if !ip.IsValid() {
		return
	}
	a.pendingMu.Lock()
	defer a.pendingMu.Unlock()
	a.known[ip.Unmap()] = true
}

// pairedAddresses are the addresses the controllers in l paired from, as
// their notes say ("paired TIME from ADDR:PORT"); a note that does not
// say is skipped.
func pairedAddresses(l *peerList) map[netip.Addr]bool {
	known := map[netip.Addr]bool{}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, note := range l.entries {
		_, from, ok := strings.Cut(note, " from ")
		if !ok {
			continue
		}
		if ap, err := netip.ParseAddrPort(strings.TrimSpace(from)); err == nil {
			known[ap.Addr().Unmap()] = true
		}
	}
	return known
}

// readAfter is a connection whose first bytes (head) were read already:
// reads give them first.
type readAfter struct {
	net.Conn
	head []byte
}

func (r *readAfter) Read(b []byte) (int, error) {
	if len(r.head) > 0 {
		n := copy(b, r.head)
		r.head = r.head[n:]
		return n, nil
	}
	return r.Conn.Read(b)
}
