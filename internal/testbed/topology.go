// Package testbed builds the hosts and links that tlab's experiments run on:
// one network namespace per host, and for every link a pair of veths per
// host whose router ends are joined by tlab's user-space link emulator.
//
// Namespaces are held by file descriptors, not bind-mounted under
// /run/netns: when tlab exits, even by SIGKILL, the kernel frees them with
// every interface inside, and the emulator process dies with its parent.
// What could still outlive a run (a temp directory, an external server
// started in a namespace) is recorded in a run registry that `tlab cleanup`
// reads.
package testbed

import (
	"fmt"
	"net"
	"regexp"
	"time"

	"tlab/internal/emu"
)

// Topology is a set of named hosts and the links between them, as data.
type Topology struct {
	Hosts []string `yaml:"hosts" json:"hosts"`
	Links []Link   `yaml:"links" json:"links"`
	// CPU limits the processes some hosts start (by host name): a
	// constrained fog node, a 1-vCPU cloud task. tlab's own in-process
	// stacks are not processes of a host and stay unlimited.
	CPU map[string]CPULimit `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	// MultiHome, when set, gives one host several access links to one
	// peer and moves its route between them (multihome.go).
	MultiHome *MultiHome `yaml:"multi_home,omitempty" json:"multi_home,omitempty"`
}

// Link joins the hosts of side A to the hosts of side B through one
// emulated link. Several hosts on one side share that link, as stations
// share a Wi-Fi access: their traffic meets in one queue.
type Link struct {
	Name   string         `yaml:"name" json:"name"`
	A      []string       `yaml:"a" json:"a"`
	B      []string       `yaml:"b" json:"b"`
	Config emu.LinkConfig `yaml:"config" json:"config"`
}

// PathRTT is the sum of the links' base RTTs: a message that crosses
// every link once, one way, takes half of it.
func (t Topology) PathRTT() time.Duration {
	var d time.Duration
	for _, l := range t.Links {
		d += l.Config.BaseRTT()
	}
	return d
}

// PathLoss is the chance that a packet is lost crossing every link of
// the topology one way, the mean of the two directions' (each link's
// long-run loss, Bernoulli or Gilbert-Elliott): what a plan needs to
// foresee retransmission timeouts.
func (t Topology) PathLoss() float64 {
	up, down := 1.0, 1.0 // chance to get through
	for _, l := range t.Links {
		u, _ := l.Config.Up.Loss.ExpectedLoss()
		d, _ := l.Config.Down.Loss.ExpectedLoss()
		up *= 1 - u
		down *= 1 - d
	}
	return 1 - (up+down)/2
}

// ClientServer is the simplest topology: a client and a server joined by
// one link ("path"), up being client to server.
func ClientServer(cfg emu.LinkConfig) Topology {
	return Topology{
		Hosts: []string{"client", "server"},
		Links: []Link{{Name: "path", A: []string{"client"}, B: []string{"server"}, Config: cfg}},
	}
}

// Chain joins hosts in a line, host i to host i+1 by link i (named
// "HOSTi-HOSTi+1"), each link with its own config: for example publisher,
// broker, subscriber.
func Chain(hosts []string, cfgs []emu.LinkConfig) (Topology, error) {
	if len(hosts) < 2 || len(cfgs) != len(hosts)-1 {
		return Topology{}, fmt.Errorf("a chain of %d hosts needs %d link configs, got %d", len(hosts), len(hosts)-1, len(cfgs))
	}
	t := Topology{Hosts: hosts}
	for i, c := range cfgs {
		t.Links = append(t.Links, Link{Name: hosts[i] + "-" + hosts[i+1], A: []string{hosts[i]}, B: []string{hosts[i+1]}, Config: c})
	}
	return t, nil
}

// SharedAccess puts several clients on one access link towards a server,
// so that they contend for its rate and queue.
func SharedAccess(clients []string, server string, cfg emu.LinkConfig) Topology {
	return Topology{
		Hosts: append(append([]string(nil), clients...), server),
		Links: []Link{{Name: "access", A: clients, B: []string{server}, Config: cfg}},
	}
}

var hostName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,30}$`)

// MaxHostsPerLink bounds a link's hosts by the addresses of its /24.
const MaxHostsPerLink = 250

// Validate checks names, references and link configs.
func (t Topology) Validate() error {
	if len(t.Hosts) < 2 {
		return fmt.Errorf("topology: need at least two hosts, have %d", len(t.Hosts))
	}
	if len(t.Links) == 0 || len(t.Links) > 250 {
		return fmt.Errorf("topology: need 1 to 250 links, have %d", len(t.Links))
	}
	seen := map[string]bool{}
	for _, h := range t.Hosts {
		if !hostName.MatchString(h) {
			return fmt.Errorf("topology: host name %q: want lower-case letters, digits, - or _, starting with a letter", h)
		}
		if seen[h] {
			return fmt.Errorf("topology: host %q named twice", h)
		}
		seen[h] = true
	}
	onLink := map[string]bool{}
	linkNames := map[string]bool{}
	for i, l := range t.Links {
		if l.Name == "" {
			return fmt.Errorf("topology: link %d has no name", i)
		}
		if linkNames[l.Name] {
			return fmt.Errorf("topology: link %q named twice", l.Name)
		}
		linkNames[l.Name] = true
		if len(l.A) == 0 || len(l.B) == 0 {
			return fmt.Errorf("topology: link %q needs hosts on both sides", l.Name)
		}
		if len(l.A)+len(l.B) > MaxHostsPerLink {
			return fmt.Errorf("topology: link %q has more than %d hosts", l.Name, MaxHostsPerLink)
		}
		here := map[string]bool{}
		for _, h := range append(append([]string(nil), l.A...), l.B...) {
			if !seen[h] {
				return fmt.Errorf("topology: link %q names unknown host %q", l.Name, h)
			}
			if here[h] {
				return fmt.Errorf("topology: host %q is on link %q twice", h, l.Name)
			}
			here[h] = true
			onLink[h] = true
		}
		if err := l.Config.Validate(); err != nil {
			return fmt.Errorf("topology: link %q: %w", l.Name, err)
		}
	}
	for _, h := range t.Hosts {
		if !onLink[h] {
			return fmt.Errorf("topology: host %q is on no link", h)
		}
	}
	if t.MultiHome != nil {
		if err := t.MultiHome.validate(t); err != nil {
			return fmt.Errorf("topology: %w", err)
		}
	}
	for h, l := range t.CPU {
		if !seen[h] {
			return fmt.Errorf("topology: cpu limit for unknown host %q", h)
		}
		if err := l.Validate(); err != nil {
			return fmt.Errorf("topology: host %s: %w", h, err)
		}
	}
	return nil
}

// Addressing: link i uses 198.18.(first+i+1).0/24, from the range RFC
// 2544 reserves for benchmarking, so lab traffic can never be mistaken for
// (or routed to) a real network; first is 0 unless the testbed must reach
// a real address in that range (Options.Reach). The k-th host of a link
// (side A first) gets .k+1; its interface gets a locally administered MAC
// 02:74:6c:LL:KK:00 and the emulator's port facing it 02:74:6c:LL:KK:01.

func linkSubnet(first, li int) *net.IPNet {
	return &net.IPNet{IP: net.IPv4(198, 18, byte(first+li+1), 0).To4(), Mask: net.CIDRMask(24, 32)}
}

func hostIP(first, li, k int) net.IP {
	return net.IPv4(198, 18, byte(first+li+1), byte(k+1)).To4()
}

// firstSubnet is the smallest offset, in steps of 16, at which none of
// the links' subnets holds an address of reach: a host of the testbed
// could not reach such an address beyond it, since its own link would
// claim it.
func firstSubnet(links int, reach []net.IP) (int, error) {
	for first := 0; first+links < 255; first += 16 {
		clear := true
		for li := 0; li < links && clear; li++ {
			for _, ip := range reach {
				if linkSubnet(first, li).Contains(ip) {
					clear = false
				}
			}
		}
		if clear {
			return first, nil
		}
	}
	return 0, fmt.Errorf("testbed: no room in 198.18.0.0/16 for %d links beside %v", links, reach)
}

func hostMAC(li, k int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0x74, 0x6c, byte(li + 1), byte(k + 1), 0}
}

func portMAC(li, k int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0x74, 0x6c, byte(li + 1), byte(k + 1), 1}
}
