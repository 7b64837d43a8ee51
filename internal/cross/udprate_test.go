package cross

import (
	"context"
	"testing"
	"time"

	"tlab/internal/proto"
	"tlab/internal/units"
)

// TestUDPPacerKeepsItsRate: a constant-rate UDP flow of 4.8 Mbit/s sends
// 1200-byte datagrams (9600 bits) 500 times a second; over 1 s on
// loopback, which loses none, its receiver's goodput (its bytes over the
// span from first to last arrival, N datagrams over N−1 gaps) is 4.8 ·
// 500/499 = 4.81 Mbit/s. The pacer owes what the elapsed time has earned,
// so a late tick catches up; what a stall at either end of the flow can
// move is bounded here by 100 ms of this busy host's scheduling on a 1 s
// flow: 4.8 Mbit/s within −20 % and +25 %. A rate taken as bytes a second
// for bits would send 8 times as fast.
func TestUDPPacerKeepsItsRate(t *testing.T) {
	zero := units.Duration(0)
	cfg := Config{UDPRate: units.Bitrate(4.8e6), Direction: Up, Lead: &zero}
	ep := Endpoints{Client: proto.LocalNet{}, Server: proto.LocalNet{}, ServerAddr: loopback}
	r, err := Start(context.Background(), ep, cfg, proto.DefaultSettings(), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	flows, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var udp *FlowResult
	for i := range flows {
		if !flows[i].RTT {
			udp = &flows[i]
		}
	}
	if udp == nil {
		t.Fatalf("no UDP flow among %+v", flows)
	}
	if udp.GoodputMbps < 0.8*4.8 || udp.GoodputMbps > 1.25*4.8 {
		t.Errorf("%s: %.2f Mbit/s (%d bytes), want 4.8 Mbit/s", udp.Name, udp.GoodputMbps, udp.Bytes)
	}
}
