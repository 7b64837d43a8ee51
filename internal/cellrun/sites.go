package cellrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"tlab/internal/plan"
	"tlab/internal/results"
	"tlab/internal/scenario"
)

// SiteSetup is what a site's factory is given for one run.
type SiteSetup struct {
	// Kind is the site's kind, as the scenario's sites: names it.
	Kind string
	// Scenario is the run's (its sites: section, its link overrides).
	Scenario *scenario.Scenario
	// Dir is the run directory; Resume says the run continues the one in
	// it (whose manifest names, say, the agent it was measured with).
	Dir    string
	Resume bool
	// Given is what the run was handed for this kind on its command line
	// (the agent's *RemoteTarget for AgentSite); nil when nothing.
	Given any
	// Log, when set, hears what the site says about itself.
	Log io.Writer
}

// SiteFactory makes a run's site of one kind. It returns a nil Site (and
// no error) when the run was not given one (no --remote, and no remote
// run to resume): the run then refuses the cells that need it, before
// any cell runs.
type SiteFactory func(SiteSetup) (Site, error)

// siteFactories holds the registered kinds' factories.
type siteFactories struct {
	mu  sync.Mutex
	new map[string]SiteFactory
}

var siteRegistry = &siteFactories{new: map[string]SiteFactory{}}

// RegisterSite adds a kind of site a scenario can name in sites:, with
// the factory that makes it for a run, as database/sql drivers register
// themselves: the scenario learns the kind (scenario.RegisterSite), the
// run its factory. It panics on a kind registered twice.
func RegisterSite(kind scenario.SiteKind, factory SiteFactory) {
	if factory == nil {
		panic("experiment: site kind " + kind.Kind + " has no factory")
	}
	siteRegistry.mu.Lock()
	defer siteRegistry.mu.Unlock()
	if _, dup := siteRegistry.new[kind.Kind]; dup {
		panic("experiment: site kind " + kind.Kind + " registered twice")
	}
	scenario.RegisterSite(kind)
	siteRegistry.new[kind.Kind] = factory
}

func siteFactory(kind string) (SiteFactory, bool) {
	siteRegistry.mu.Lock()
	defer siteRegistry.mu.Unlock()
	f, ok := siteRegistry.new[kind]
	return f, ok
}

// runSites are the sites a run started, by kind.
type runSites map[string]Site

// startSites makes and starts the sites a run needs: those of its cells'
// networks and those it was given something for. A kind the run was not
// given is left out (the sweep refuses its cells); a site that does not
// start stops the run, and the ones started before it are finished.
func StartSites(ctx context.Context, setup SiteSetup, cells []plan.Cell, given map[string]any) (runSites, error) {
	var kinds []string
	for _, c := range cells {
		if c.Site != "" && !slices.Contains(kinds, c.Site) {
			kinds = append(kinds, c.Site)
		}
	}
	for k := range given {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	sort.Strings(kinds)
	sites := runSites{}
	for _, kind := range kinds {
		factory, ok := siteFactory(kind)
		if !ok {
			return sites, sites.Finish(false, fmt.Errorf("site %q: no such kind of site", kind))
		}
		s := setup
		s.Kind, s.Given = kind, given[kind]
		site, err := factory(s)
		if err == nil && site != nil {
			err = site.Start(ctx)
			if err != nil {
				err = errors.Join(err, site.Finish(false))
			}
		}
		if err != nil {
			return nil, sites.Finish(false, err)
		}
		if site != nil {
			sites[kind] = site
		}
	}
	return sites, nil
}

// finish finishes every started site and returns err joined with what
// they said.
func (s runSites) Finish(completed bool, err error) error {
	kinds := make([]string, 0, len(s))
	for k := range s {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if ferr := s[k].Finish(completed); ferr != nil {
			err = errors.Join(err, ferr)
		}
	}
	return err
}

// PlaceAt is the placement of every cell of a run at a site of kind
// chosen when the run starts (tlab run --remote): its cells run on the
// kind's network, and on the profiles beside it, alternately (a
// recording of that path to compare with it: --replay). The run keeps
// the scenario as written and the placement in its manifest apart
// (Sweep.Placed), so that a resume places the cells again (ApplyPlacement).
func PlaceAt(kind string, beside ...string) (results.Placement, error) {
	for _, k := range scenario.SiteKinds() {
		if k.Kind == kind {
			return results.Placement{Site: kind, Network: k.Network, Profiles: append([]string{k.Network}, beside...)}, nil
		}
	}
	return results.Placement{}, fmt.Errorf("site %q: no such kind of site", kind)
}

// ApplyPlacement is the scenario sc, as written, with its cells placed by p: its
// profiles p's, and p's network at p's site (sc's own sites: replaced).
// The scenario's link overrides (--link, link:, a sweep of link fields)
// stay: at a site they are what is emulated in front of it (Behind).
func ApplyPlacement(sc *scenario.Scenario, p results.Placement) (*scenario.Scenario, error) {
	return sc.Placed(p.Profiles, map[string]string{p.Network: p.Site})
}

// Placed is a run's scenario as written and where the run placed its
// cells (the run's scenario is ApplyPlacement(Written, Placement)).
type Placed struct {
	Written   *scenario.Scenario
	Placement results.Placement
}
