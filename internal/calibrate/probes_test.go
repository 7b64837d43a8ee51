package calibrate

import (
	"encoding/binary"
	"net"
	"testing"

	"tlab/internal/emu"
)

// RFC 1071's worked example (section 3): the words 0001 f203 f4f5 f6f7
// sum to ddf2, whose complement is the checksum 220d.
func TestInternetChecksumRFC1071(t *testing.T) {
	if got := internetChecksum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0); got != 0x220d {
		t.Errorf("checksum %04x, want 220d", got)
	}
}

// A generated frame is one a receiver accepts: the IP header and the UDP
// datagram (with its pseudo-header) each sum to zero with their checksum,
// the lengths agree, and the emulator's flow tells two source ports
// apart (it parsed the headers).
func TestUDPFrameIsValid(t *testing.T) {
	src, dst := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	for _, payload := range []int{0, 1, 22, 1400} {
		f := udpFrame(src, dst, net.IPv4(10, 0, 0, 1), net.IPv4(198, 18, 1, 250), 40001, 9, payload)
		if len(f) != 42+payload {
			t.Fatalf("payload %d: frame of %d bytes", payload, len(f))
		}
		ip := f[14:34]
		if internetChecksum(ip, 0) != 0 {
			t.Errorf("payload %d: IP header checksum does not verify", payload)
		}
		if got := binary.BigEndian.Uint16(ip[2:4]); int(got) != 28+payload {
			t.Errorf("payload %d: IP total length %d", payload, got)
		}
		udp := f[34:]
		pseudo := uint32(0x0a00+0x0001+0xc612+0x01fa) + 17 + uint32(8+payload)
		if internetChecksum(udp, pseudo) != 0 {
			t.Errorf("payload %d: UDP checksum does not verify", payload)
		}
		flow, _ := emu.ParseFrame(f)
		other, _ := emu.ParseFrame(udpFrame(src, dst, net.IPv4(10, 0, 0, 1), net.IPv4(198, 18, 1, 250), 40002, 9, payload))
		if flow == other {
			t.Errorf("payload %d: the emulator does not tell source ports apart (%v, %v)", payload, flow, other)
		}
	}
}
