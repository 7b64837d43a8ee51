package testbed

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"time"

	"tlab/internal/emu"
	"tlab/internal/units"
)

// MultiHome makes one host of a topology (Host, the client) reach one
// peer (Peer, the server) over several access links at once, as a phone
// on Wi-Fi and 5G, and moves its route between them at Handovers.
//
// Addressing: every link keeps its own subnet (198.18.(first+i+1).0/24),
// so the host has one address on each link, as a device has one on each
// network. The peer also gets a service address, 198.18.first.1/32 on its
// loopback, which no link's subnet holds: it is where the host's programs
// connect (Testbed.Addr from the host to the peer), and it is reachable
// over every link. Routing in the host: the main table sends the service
// address over the active link (the first of the host's links at the
// start); each link also has a table of its own, chosen by a rule for
// the host's address on it, so that a socket bound to an address (a TCP
// connection made before a handover, an MPTCP subflow) keeps to that
// address's link, as it would on a real device. The peer answers each of
// the host's addresses over its own link (connected routes).
type MultiHome struct {
	Host      string     `yaml:"host" json:"host"`
	Peer      string     `yaml:"peer" json:"peer"`
	Handovers []Handover `yaml:"handovers" json:"handovers,omitempty"`
}

// Handover moves the host's route from link From to link To, At on the
// emulator's link clock (as a timeline's steps; to within the time the
// change takes to reach the emulator: each change is recorded with the
// link clock's time in link-events.csv). Two kinds, as radios do it:
//
//   - break-before-make (Outage, which may be 0): at At the link From
//     goes down (every packet either way is dropped as it arrives); at
//     At+Outage the link To is up and the route moves to it.
//   - make-before-break (Overlap > 0): at At the link To is up and the
//     route moves to it; at At+Overlap the link From goes down.
//
// A link that went down stays down until a handover moves the route to
// it again. Every link is up at the start: a device attached to both
// networks, using the first.
type Handover struct {
	At      units.Duration `yaml:"at" json:"at"`
	From    string         `yaml:"from" json:"from"`
	To      string         `yaml:"to" json:"to"`
	Outage  units.Duration `yaml:"outage" json:"outage,omitempty"`
	Overlap units.Duration `yaml:"overlap" json:"overlap,omitempty"`
}

// MultiHomed is a client with one access link per config to one server,
// the links named by names (the first carries the route at the start).
func MultiHomed(client, server string, names []string, cfgs []emu.LinkConfig, handovers []Handover) (Topology, error) {
	if len(names) < 2 || len(names) != len(cfgs) {
		return Topology{}, fmt.Errorf("a multi-homed client needs two or more links, each with a config: %d names, %d configs", len(names), len(cfgs))
	}
	t := Topology{Hosts: []string{client, server}, MultiHome: &MultiHome{Host: client, Peer: server, Handovers: handovers}}
	for i, n := range names {
		t.Links = append(t.Links, Link{Name: n, A: []string{client}, B: []string{server}, Config: cfgs[i]})
	}
	return t, nil
}

// links returns the names of the links joining the host and its peer, in
// topology order.
func (m *MultiHome) links(t Topology) []string {
	var out []string
	for _, l := range t.Links {
		if slices.Contains(l.A, m.Host) && slices.Contains(l.B, m.Peer) || slices.Contains(l.B, m.Host) && slices.Contains(l.A, m.Peer) {
			out = append(out, l.Name)
		}
	}
	return out
}

// validate checks the multi-homed host against the topology: two links
// or more to its peer, handovers between them in time order, each of one
// kind, from the link that has the route.
func (m *MultiHome) validate(t Topology) error {
	if !slices.Contains(t.Hosts, m.Host) || !slices.Contains(t.Hosts, m.Peer) || m.Host == m.Peer {
		return fmt.Errorf("multi-home: host %q and peer %q must be two hosts of the topology", m.Host, m.Peer)
	}
	links := m.links(t)
	if len(links) < 2 {
		return fmt.Errorf("multi-home: %s has %d link(s) to %s; a handover needs two or more", m.Host, len(links), m.Peer)
	}
	for _, l := range t.Links {
		if slices.Contains(links, l.Name) && len(l.A)+len(l.B) != 2 {
			return fmt.Errorf("multi-home: link %s must join %s and %s alone", l.Name, m.Host, m.Peer)
		}
		if slices.Contains(links, l.Name) && (l.Config.Up.Loss.Model == emu.LossGilbert || l.Config.Down.Loss.Model == emu.LossGilbert) {
			return fmt.Errorf("multi-home: link %s: a handover takes a link down by its loss rate (100 %%), and this link's loss is gilbert-elliott", l.Name)
		}
	}
	active := links[0]
	var prevEnd time.Duration
	for i, h := range m.Handovers {
		switch {
		case !slices.Contains(links, h.From) || !slices.Contains(links, h.To) || h.From == h.To:
			return fmt.Errorf("multi-home: handover %d: from %q to %q: want two of %s's links %v", i+1, h.From, h.To, m.Host, links)
		case h.From != active:
			return fmt.Errorf("multi-home: handover %d: from %s, but the route is on %s then", i+1, h.From, active)
		case h.At < 0 || h.Outage < 0 || h.Overlap < 0:
			return fmt.Errorf("multi-home: handover %d: negative time", i+1)
		case h.Outage > 0 && h.Overlap > 0:
			return fmt.Errorf("multi-home: handover %d: give an outage (break before make) or an overlap (make before break), not both", i+1)
		case i > 0 && h.At.D() < prevEnd:
			return fmt.Errorf("multi-home: handover %d at %v starts before the previous one has ended (%v)", i+1, h.At, units.Duration(prevEnd))
		}
		prevEnd = h.At.D() + h.Outage.D() + h.Overlap.D()
		active = h.To
	}
	return nil
}

// handoverAction is one change of a handover: a link down, or a link up
// with the route moved to it.
type handoverAction struct {
	at   time.Duration
	link string
	up   bool // up: the link is up and carries the route
}

// actions are the handovers' changes in time order.
func (m *MultiHome) actions() []handoverAction {
	var out []handoverAction
	for _, h := range m.Handovers {
		if h.Overlap > 0 {
			out = append(out, handoverAction{h.At.D(), h.To, true}, handoverAction{h.At.D() + h.Overlap.D(), h.From, false})
		} else {
			out = append(out, handoverAction{h.At.D(), h.From, false}, handoverAction{h.At.D() + h.Outage.D(), h.To, true})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// serviceIP is the peer's address reachable over every link: in the /24
// below the links' subnets, which no link uses.
func serviceIP(first int) net.IP { return net.IPv4(198, 18, byte(first), 1).To4() }

// ErrNotMultiHomed is returned for a handover asked of a testbed without
// a multi-homed host.
var ErrNotMultiHomed = errors.New("testbed: no multi-homed host")
