//go:build linux

package emu

import "testing"

// TestRingFrameSize: a slot holds the kernel's header, the Ethernet header
// at its offset and a whole frame of the MTU, is a multiple of the ring's
// alignment, and tiles a block exactly.
func TestRingFrameSize(t *testing.T) {
	for _, c := range []struct{ mtu, want int }{{68, 256}, {1500, 2048}, {1500 + 1, 2048}, {1950, 2048}, {1951, 4096}, {9000, 16384}} {
		got := ringFrameSize(c.mtu)
		if got != c.want {
			t.Errorf("MTU %d: slot %d bytes, want %d", c.mtu, got, c.want)
		}
		if got < 66+14+c.mtu || got%16 != 0 || (ringBlockSize%got != 0 && got%ringBlockSize != 0) {
			t.Errorf("MTU %d: slot %d bytes cannot hold the frame or does not tile a block", c.mtu, got)
		}
	}
}
