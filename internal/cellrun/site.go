package cellrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"

	"tlab/internal/cross"
	"tlab/internal/emu"
	"tlab/internal/results"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

// A Site is where a cell runs: the emulated testbed of the cell's topology
// (testbedSite), the real path to a tlab agent (agentSite, remote.go), an
// emulated link in front of another site (Behind), and whatever comes
// next. A run starts each site its cells need once, RunCell opens it for
// each cell and runs the cell's own logic on the Place (the workload,
// what runs beside it, the ledger and the summary), and the run finishes
// it after its last cell. A new site is one file: a type with these
// methods (embed CellOnly for a site with nothing to do per run) and a
// factory registered with RegisterSite.
type Site interface {
	// Start readies the site for a run's cells (the agent's site dials
	// the agent and measures the path), once, before the first cell.
	Start(ctx context.Context) error
	// Note adds what the site knows of the run to its manifest (the
	// agent and the path as measured at Start); called when the run
	// writes its manifest, before the cells.
	Note(m *results.Manifest)
	// Open prepares the site for one cell: its hosts, by the workload's
	// roles, and what the cell reads of its links. The Place is closed by
	// the caller, also on error.
	Open(ctx context.Context, spec CellSpec, info workload.Info) (*Place, error)
	// Finish ends the run at the site, also after a failed or cancelled
	// run (completed false): what Start opened is released, and a run
	// that completed is checked once more (the path at the end).
	Finish(completed bool) error
}

// CellOnly is the per-run life of a site that has none: embedded in a
// site, it starts, notes and finishes nothing.
type CellOnly struct{}

func (CellOnly) Start(context.Context) error { return nil }
func (CellOnly) Note(*results.Manifest)      {}
func (CellOnly) Finish(bool) error           { return nil }

// Place is a site opened for one cell.
type Place struct {
	// Hosts play the workload's roles.
	Hosts workload.Hosts
	// Meter reads the measured link's counters and the emulator's
	// release statistics (noLinkMeter where nothing is emulated).
	Meter Meter
	// CertIP is the address at which the first role reaches the second:
	// the run's server certificate names it.
	CertIP net.IP
	// Measured is the link the workload's first role sends on (empty
	// where the site has none); UpIsAtoB says its up direction is that
	// role's sending direction.
	Measured testbed.Link
	UpIsAtoB bool
	// RTTMs is the path's base round trip: the emulated link's, or the
	// real path's as measured at the run's start.
	RTTMs float64
	// Emulated says an emulator carried the cell's packets: where not,
	// the emulator's figures and the bytes on the wire are unknown (NaN),
	// never zero.
	Emulated bool
	// Beside gives the ends of traffic that runs beside the workload on
	// its bottleneck, from the host of role near to the first host across
	// its link; nil where the site has no link to load.
	Beside func(near string) (cross.Endpoints, error)
	// Beyond, when set, is what the roles this place runs on this machine
	// reach across the site: a link may be put in front of it (Behind).
	Beyond *Beyond
	// Check, when set, says after the workload whether the site is still
	// whole (an agent that went away measured a broken path).
	Check func() error
	// Close releases what Open made.
	Close func() error
}

func (p *Place) close() error {
	if p == nil || p.Close == nil {
		return nil
	}
	return p.Close()
}

// testbedSite runs a cell on a fresh testbed of its topology: namespaces,
// veths and the user-space emulator, seeded by the cell, so that every
// protocol meets the same loss and jitter pattern and starts with fresh
// kernel state.
type TestbedSite struct{ CellOnly }

func (TestbedSite) Open(_ context.Context, spec CellSpec, info workload.Info) (*Place, error) {
	opts := testbed.Options{Seed: spec.Cell.Seed, Emulator: spec.Emulator, Label: spec.Label, TCPECN: spec.Settings.TCPECN, CaptureDir: spec.CaptureDir}
	tb, err := testbed.Build(spec.Topology, opts)
	if err != nil {
		return nil, err
	}
	p := &Place{Meter: tb.Emulator(), Emulated: true, Close: tb.Close}
	th := Hosts{tb, spec.Roles, spec.Groups}
	p.Hosts = th
	// Certificates name the address at which the first role reaches the
	// second (the client its server).
	if len(info.Roles) > 1 {
		if p.CertIP, err = th.Addr(info.Roles[0], info.Roles[1]); err != nil {
			return p, err
		}
	}
	if p.Measured, p.UpIsAtoB, err = measuredLink(spec.Topology, spec.Roles[info.Roles[0]]); err != nil {
		return p, err
	}
	p.RTTMs = float64(p.Measured.Config.BaseRTT().Nanoseconds()) / 1e6
	p.Beside = func(nearRole string) (cross.Endpoints, error) {
		near := spec.Roles[nearRole]
		link, nearIsA, err := measuredLink(spec.Topology, near)
		if err != nil {
			return cross.Endpoints{}, err
		}
		far := link.B[0]
		if !nearIsA {
			far = link.A[0]
		}
		farIP, err := th.Addr(near, far)
		if err != nil {
			return cross.Endpoints{}, err
		}
		return cross.Endpoints{Client: th.Net(near), Server: th.Net(far), ServerAddr: farIP}, nil
	}
	return p, nil
}

// measuredLink returns the link the host of the workload's first role
// sends on, and whether its up direction (A to B) is that host's sending
// direction.
func measuredLink(t testbed.Topology, host string) (testbed.Link, bool, error) {
	for _, l := range t.Links {
		if slices.Contains(l.A, host) {
			return l, true, nil
		}
		if slices.Contains(l.B, host) {
			return l, false, nil
		}
	}
	return testbed.Link{}, false, fmt.Errorf("host %s is on no link", host)
}

// noLinkMeter is the meter of a site with no emulated link: no counters.
type NoLinkMeter struct{}

func (NoLinkMeter) Stats() (emu.EngineStats, error) { return emu.EngineStats{}, nil }
func (NoLinkMeter) ResetLateness() error            { return nil }

// ErrNoBeside is returned for traffic beside the workload at a site that
// has no link of its own to load.
var ErrNoBeside = errors.New("traffic beside the workload runs between two hosts of an emulated link: this site has none to load")
