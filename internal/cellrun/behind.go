package cellrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"tlab/internal/emu"
	"tlab/internal/proto"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// Beyond is what the roles a place runs on this machine reach across its
// site (the agent, across the real path): what a link put in front of the
// site (Behind) needs to know.
type Beyond struct {
	// IPs are the far addresses: the link's subnets stay clear of them.
	IPs []net.IP
	// Probe is an address (host:port) that takes a TCP connection through
	// the link when the link routes out; Name says what it is ("the agent
	// at HOST:PORT").
	Probe, Name string
	// Hosts are the place's hosts with the roles it runs on this machine
	// moved into local, the network behind the link.
	Hosts func(local proto.Net) workload.Hosts
}

// LinkOf gives the link a cell emulates in front of a site (Behind); a
// perfect link is none.
type LinkOf func(spec CellSpec, info workload.Info) (emu.LinkConfig, error)

// CellLink is the cell's own link: the one its workload's first role
// sends on. On a network a site provides, that is the scenario's link
// overrides over a perfect link (scenario.LinkFor).
func CellLink(spec CellSpec, info workload.Info) (emu.LinkConfig, error) {
	link, _, err := measuredLink(spec.Topology, spec.Roles[info.Roles[0]])
	return link.Config, err
}

// Behind is site with an emulated link in front of it: where a cell's link
// (link) is not perfect, the roles the site runs on this machine run in a
// namespace of their own behind that link, whose far end routes them out
// of this machine (testbed.Egress), and the cell reads that link's
// counters; otherwise the cell meets the site as it is. The site's per-run
// life is its own.
func Behind(link LinkOf, site Site) Site { return behindSite{Site: site, link: link} }

type behindSite struct {
	Site
	link LinkOf
}

// Near-link hosts: the local roles' namespace and the one that routes it
// out.
const (
	nearHost    = "near"
	gatewayHost = "gateway"
	nearLink    = "near"
)

func (b behindSite) Open(ctx context.Context, spec CellSpec, info workload.Info) (*Place, error) {
	p, err := b.Site.Open(ctx, spec, info)
	if err != nil {
		return p, err
	}
	cfg, err := b.link(spec, info)
	if err != nil || cfg.IsPerfect() {
		return p, nil // the site as it is
	}
	if p.Beyond == nil {
		return p, errors.New("this site has no roles on this machine to put behind an emulated link")
	}
	return p, openNear(ctx, p, spec, cfg)
}

// openNear builds the emulated link in front of p's site, moves p's local
// roles behind it, and checks that what they reach answers from there.
func openNear(ctx context.Context, p *Place, spec CellSpec, cfg emu.LinkConfig) error {
	beyond := p.Beyond
	topo := testbed.Topology{Hosts: []string{nearHost, gatewayHost},
		Links: []testbed.Link{{Name: nearLink, A: []string{nearHost}, B: []string{gatewayHost}, Config: cfg}}}
	tb, err := testbed.Build(topo, testbed.Options{Seed: spec.Cell.Seed, Emulator: spec.Emulator, Label: spec.Label,
		TCPECN: spec.Settings.TCPECN, CaptureDir: spec.CaptureDir, Reach: beyond.IPs})
	if err != nil {
		return fmt.Errorf("the emulated link in front of the path: %w", err)
	}
	siteClose := p.Close
	p.Close = func() error {
		err := tb.Close()
		if siteClose != nil {
			err = errors.Join(err, siteClose())
		}
		return err
	}
	if err := tb.Egress(gatewayHost); err != nil {
		return fmt.Errorf("the emulated link in front of the path: %w", err)
	}
	near := tb.Host(nearHost)
	// The cell would fail on its first connection anyway; this says why.
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := near.DialContext(dctx, nil, "tcp", beyond.Probe)
	if err != nil {
		return fmt.Errorf("the emulated link in front of the path: %s cannot be reached through it (does a firewall on this machine drop forwarded traffic?): %w", beyond.Name, err)
	}
	c.Close()
	p.Hosts = beyond.Hosts(near)
	p.Meter, p.Emulated = tb.Emulator(), true
	p.Measured, p.UpIsAtoB = topo.Links[0], true
	p.RTTMs += float64(cfg.BaseRTT().Nanoseconds()) / 1e6
	return nil
}
