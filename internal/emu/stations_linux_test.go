package emu

import (
	"fmt"
	"testing"
)

// stationEngine is an engine of one shared link with n station ports on
// side A and one server port on side B, each with an idle receive ring in
// plain memory: what the loop walks for a shared access of n stations.
func stationEngine(n int) *engine {
	const frameSize, frames = 2048, 64
	ls := &linkState{}
	e := &engine{links: []*linkState{ls}}
	add := func(side int, mac [6]byte) {
		ls.ports[side] = append(ls.ports[side], len(e.ports))
		e.ports = append(e.ports, &port{link: 0, side: side, mac: mac,
			ring: &rxRing{mem: make([]byte, frameSize*frames), frameSize: frameSize, frames: frames}})
	}
	for i := range n {
		add(0, [6]byte{0x02, 0x74, 0x6c, 1, byte(i + 1), 0})
	}
	add(1, [6]byte{0x02, 0x74, 0x6c, 1, byte(n + 1), 0})
	return e
}

// BenchmarkStations measures what a shared access's stations cost the
// engine, as their number grows: one spinning pass over every port's
// ring (poll, ns per pass, paid on every turn of the loop whether a
// frame came or not) and the choice of a frame's output port among the
// stations (route, ns per frame; a linear search of their MACs, the last
// station the worst case). docs/methodology.md ("What a long study
// costs") sets these beside the release error measured end to end.
//
//	go test ./internal/emu -run ^$ -bench Stations
func BenchmarkStations(b *testing.B) {
	for _, n := range []int{3, 8, 32, 64, 128} {
		e := stationEngine(n)
		frame := make([]byte, 64)
		copy(frame, e.ports[n-1].mac[:]) // to the last station
		b.Run(fmt.Sprintf("poll/%d", n), func(b *testing.B) {
			for b.Loop() {
				if e.pollRings() {
					b.Fatal("an idle ring reported a frame")
				}
			}
		})
		b.Run(fmt.Sprintf("route/%d", n), func(b *testing.B) {
			for b.Loop() {
				if e.route(e.links[0], 0, frame) != n-1 {
					b.Fatal("routed to the wrong station")
				}
			}
		})
	}
}

// TestRouteFindsEveryStation: a unicast frame goes to the station that
// owns its destination MAC, whichever of 64; a broadcast floods (-1), and
// the server's side, with one port, takes every frame.
func TestRouteFindsEveryStation(t *testing.T) {
	const n = 64
	e := stationEngine(n)
	frame := make([]byte, 64)
	for i := range n {
		copy(frame, e.ports[i].mac[:])
		if got := e.route(e.links[0], 0, frame); got != i {
			t.Fatalf("a frame to station %d went to port %d", i, got)
		}
	}
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	if got := e.route(e.links[0], 0, frame); got != -1 {
		t.Errorf("a broadcast went to port %d, want -1 (flood)", got)
	}
	if got := e.route(e.links[0], 1, frame); got != n {
		t.Errorf("the server's side routed to %d, want its one port %d", got, n)
	}
}
