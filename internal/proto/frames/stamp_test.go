package frames

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"tlab/internal/proto"
)

// TestAStalledReaderStampsArrivals: a frame server's reader that is held
// up (here by its first frame's handler, 300 ms; on a busy host by the
// scheduler) still gives each later datagram the time it arrived, the
// kernel's receive stamp (SO_TIMESTAMPNS), not the time the reader got to
// it. The second frame is sent right after the first, so on loopback it
// arrives within a millisecond or so of its send; a stamp taken at the
// read would be some 300 ms late. Bound: under 100 ms, a third of the
// stall, for a busy host's wake-ups between the send and the kernel's
// receive.
func TestAStalledReaderStampsArrivals(t *testing.T) {
	const stall = 300 * time.Millisecond
	for name, ft := range map[string]proto.FrameTransport{"udp": udpFrames{}, "rtp": rtpFrames{}, "mpegts": mpegtsFrames{}} {
		t.Run(name, func(t *testing.T) {
			probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			if err != nil {
				t.Fatal(err)
			}
			port := probe.LocalAddr().(*net.UDPAddr).Port
			probe.Close()
			var mu sync.Mutex
			arrived := map[uint32][]proto.Packet{}
			got := make(chan uint32, 8)
			opts := proto.FrameOptions{FPS: 30, ReassemblyTimeout: time.Second}
			srv, err := ft.ServeFrames(proto.LocalNet{}, port, proto.DefaultSettings(), opts, func(a proto.FrameArrival) int {
				mu.Lock()
				arrived[a.ID] = a.Packets
				mu.Unlock()
				if a.ID == 1 {
					time.Sleep(stall) // the reader is held up here
				}
				got <- a.ID
				return 0
			})
			if err != nil {
				t.Skipf("%s on %d: %v", name, port, err)
			}
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cl, err := ft.DialFrames(ctx, proto.LocalNet{}, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), proto.DefaultSettings(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			sent := map[uint32][]proto.Packet{}
			for _, id := range []uint32{1, 2} {
				p, err := cl.Send(id, make([]byte, 500))
				if err != nil {
					t.Fatal(err)
				}
				sent[id] = p
			}
			for range 2 {
				select {
				case <-got:
				case <-time.After(5 * time.Second):
					t.Fatal("a frame never arrived")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			second := arrived[2]
			if len(second) == 0 || len(sent[2]) == 0 {
				t.Fatalf("frame 2: %d packets arrived of %d sent", len(second), len(sent[2]))
			}
			if owd := second[0].At.Sub(sent[2][0].At); owd < 0 || owd > 100*time.Millisecond {
				t.Errorf("frame 2's first packet stamped %v after its send: want its arrival (within 100 ms), not the read after the reader's %v stall", owd, stall)
			}
		})
	}
}
