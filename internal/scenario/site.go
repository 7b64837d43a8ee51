package scenario

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// SiteKind is a place other than the emulated testbed where cells run,
// registered by the package that runs them there (as protocols and
// workloads register themselves). A scenario names it in sites: for one
// of its networks, {remote: agent}, and that network's cells run there;
// the others run on emulated links.
type SiteKind struct {
	// Kind is how sites: names it ("agent").
	Kind string
	// Network is the network name its runs use by convention ("remote"):
	// a scenario that lists it as a profile without the site is told
	// what it meant.
	Network string
	// Doc says what the site is; Flag how a user gives it.
	Doc, Flag string
}

// siteKinds holds the registered kinds.
type siteRegistry struct {
	mu    sync.Mutex
	kinds map[string]SiteKind
}

var sites = &siteRegistry{kinds: map[string]SiteKind{}}

// RegisterSite adds a kind of site; it panics on a kind registered twice,
// as a second driver of one name would.
func RegisterSite(k SiteKind) {
	sites.mu.Lock()
	defer sites.mu.Unlock()
	if _, dup := sites.kinds[k.Kind]; dup {
		panic("scenario: site kind " + k.Kind + " registered twice")
	}
	sites.kinds[k.Kind] = k
}

// SiteKinds lists the registered kinds by name.
func SiteKinds() []SiteKind {
	sites.mu.Lock()
	defer sites.mu.Unlock()
	var out []SiteKind
	for _, k := range sites.kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

func lookupSite(kind string) (SiteKind, bool) {
	sites.mu.Lock()
	defer sites.mu.Unlock()
	k, ok := sites.kinds[kind]
	return k, ok
}

// siteByNetwork is the kind whose conventional network name is name.
func siteByNetwork(name string) (SiteKind, bool) {
	for _, k := range SiteKinds() {
		if k.Network == name {
			return k, true
		}
	}
	return SiteKind{}, false
}

// validateSites checks sites: each network is one of the profiles and
// each kind is registered.
func (s *Scenario) validateSites() error {
	networks := make([]string, 0, len(s.Sites))
	for n := range s.Sites {
		networks = append(networks, n)
	}
	slices.Sort(networks)
	for _, n := range networks {
		kind := s.Sites[n]
		if _, ok := lookupSite(kind); !ok {
			var names []string
			for _, k := range SiteKinds() {
				names = append(names, k.Kind)
			}
			return s.errAt([]any{"sites", n}, "site %q for network %s: want one of %s", kind, n, strings.Join(names, ", "))
		}
		if !slices.Contains(s.Profiles, n) {
			return s.errAt([]any{"sites", n}, "sites: network %s is not one of the profiles (%s)", n, strings.Join(s.Profiles, ", "))
		}
	}
	return nil
}

// SiteOf is the kind of site a network's cells run at ("" for the
// emulated testbed).
func (s *Scenario) SiteOf(network string) string { return s.Sites[network] }

// notAProfile explains a profile name that is a site's network given
// without the site.
func notAProfile(name string, err error) error {
	if k, ok := siteByNetwork(name); ok {
		return fmt.Errorf("profile %q: %s is %s, not an emulated link: give %s", name, name, k.Doc, k.Flag)
	}
	return err
}

// Placed is the scenario with its cells placed where a run chose to run
// them (tlab run --remote: on the real path's network, at the agent's
// site): its profiles and its sites: replaced, as --set would replace
// them, and validated again; errors keep the lines of the text s was
// read from. The run keeps s's text (YAML) and the placement apart.
func (s *Scenario) Placed(profiles []string, sites map[string]string) (*Scenario, error) {
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	for _, p := range profiles {
		list.Content = append(list.Content, str(p))
	}
	at := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
	for _, network := range slices.Sorted(maps.Keys(sites)) {
		at.Content = append(at.Content, str(network), str(sites[network]))
	}
	root := clone(s.root)
	if err := setPath(root, []string{"profiles"}, list); err != nil {
		return nil, err
	}
	if err := setPath(root, []string{"sites"}, at); err != nil {
		return nil, err
	}
	return decode(s.file, root, false, nil)
}
