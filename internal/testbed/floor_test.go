package testbed

import (
	"testing"
	"time"

	"tlab/internal/emu"
	"tlab/internal/units"
)

// The least one-way time between hosts, by hand, for frames of no size
// (no serialisation): a link of 10 ms each way with uniform jitter of
// half-width 3 ms gives 7 ms each way, 14 ms there and back; a chain
// publisher – broker – subscriber of two such links, 14 ms from end to
// end, and 7 ms from a host to its neighbour; an asymmetric link, its own
// direction's delay. No floor between two stations on the same side of a
// shared access (they do not cross the emulator), nor for a multi-homed
// client (its route moves), nor where two links join the same hosts (which
// one a message takes is the routes'), nor over a link without one.
func TestTheLeastOneWayTimeByHand(t *testing.T) {
	ms := func(v float64) units.Duration { return units.Duration(v * float64(time.Millisecond)) }
	dir := emu.DirectionConfig{Delay: ms(10), Jitter: ms(3)}
	link := emu.LinkConfig{Up: dir, Down: dir}
	cs := ClientServer(link)
	chain, err := Chain([]string{"publisher", "broker", "subscriber"}, []emu.LinkConfig{link, link})
	if err != nil {
		t.Fatal(err)
	}
	asym := ClientServer(emu.LinkConfig{Up: emu.DirectionConfig{Delay: ms(4)}, Down: emu.DirectionConfig{Delay: ms(20)}})
	shared := SharedAccess([]string{"s1", "s2"}, "server", link)
	multi := cs
	multi.MultiHome = &MultiHome{}
	twoWays := Topology{Hosts: []string{"client", "server"}, Links: []Link{
		{Name: "a", A: []string{"client"}, B: []string{"server"}, Config: link},
		{Name: "b", A: []string{"client"}, B: []string{"server"}, Config: emu.LinkConfig{}}}}
	normal := ClientServer(emu.LinkConfig{Up: emu.DirectionConfig{Delay: ms(10), Jitter: ms(3), JitterDist: emu.DistNormal}, Down: dir})
	cases := []struct {
		name     string
		topo     Topology
		from, to string
		want     time.Duration
		ok       bool
	}{
		{"client to server", cs, "client", "server", 7 * time.Millisecond, true},
		{"server to client", cs, "server", "client", 7 * time.Millisecond, true},
		{"publisher to subscriber", chain, "publisher", "subscriber", 14 * time.Millisecond, true},
		{"subscriber to broker", chain, "subscriber", "broker", 7 * time.Millisecond, true},
		{"a host to itself", chain, "broker", "broker", 0, true},
		{"asymmetric up", asym, "client", "server", 4 * time.Millisecond, true},
		{"asymmetric down", asym, "server", "client", 20 * time.Millisecond, true},
		{"station to server", shared, "s2", "server", 7 * time.Millisecond, true},
		{"station to station", shared, "s1", "s2", 0, false},
		{"multi-homed", multi, "client", "server", 0, false},
		{"two links between the same hosts", twoWays, "client", "server", 0, false},
		{"normal jitter up", normal, "client", "server", 0, false},
		{"uniform jitter down", normal, "server", "client", 7 * time.Millisecond, true},
		{"no such host", cs, "client", "nobody", 0, false},
	}
	for _, c := range cases {
		got, ok := c.topo.MinOneWay(c.from, c.to, 0)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
