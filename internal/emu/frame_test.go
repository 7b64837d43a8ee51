package emu

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// frameOf builds a real Ethernet frame with gopacket: IPv4 or IPv6, UDP
// or TCP, with the given ECN field, checksums computed.
func frameOf(t testing.TB, v6, tcp bool, ecn uint8, sport, dport uint16) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
	var ip gopacket.SerializableLayer
	var netw gopacket.NetworkLayer
	proto := layers.IPProtocolUDP
	if tcp {
		proto = layers.IPProtocolTCP
	}
	if v6 {
		eth.EthernetType = layers.EthernetTypeIPv6
		l := &layers.IPv6{Version: 6, TrafficClass: 0xb8 | ecn, HopLimit: 64, NextHeader: proto, SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
		ip, netw = l, l
	} else {
		eth.EthernetType = layers.EthernetTypeIPv4
		l := &layers.IPv4{Version: 4, IHL: 5, TOS: 0xb8 | ecn, TTL: 64, Protocol: proto, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
		ip, netw = l, l
	}
	var l4 gopacket.SerializableLayer
	if tcp {
		l := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), Seq: 1, Window: 100}
		l.SetNetworkLayerForChecksum(netw)
		l4 = l
	} else {
		l := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
		l.SetNetworkLayerForChecksum(netw)
		l4 = l
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, l4, gopacket.Payload("hello")); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ipv4HeaderValid tells whether an IPv4 header's checksum verifies.
func ipv4HeaderValid(frame []byte) bool {
	ip := frame[14:]
	ihl := int(ip[0]&0x0f) * 4
	var sum uint32
	for i := 0; i < ihl; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum) == 0xffff
}

// TestParseFrameAndMarkCE: the flow hash tells flows apart by addresses,
// protocol and ports; the ECN field is read as sent; MarkCE sets CE on
// ECN-capable frames only, and IPv4's checksum still verifies (checked
// against gopacket's own serialisation of the marked header).
func TestParseFrameAndMarkCE(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, tcp := range []bool{false, true} {
			a, _ := ParseFrame(frameOf(t, v6, tcp, NotECT, 4000, 443))
			b, _ := ParseFrame(frameOf(t, v6, tcp, ECT0, 4000, 443))
			c, _ := ParseFrame(frameOf(t, v6, tcp, NotECT, 4001, 443))
			other, _ := ParseFrame(frameOf(t, v6, !tcp, NotECT, 4000, 443))
			if a != b || a == c || a == other || a == 0 {
				t.Errorf("v6 %v tcp %v: flows %x %x %x %x: one flow must hash alike, others apart", v6, tcp, a, b, c, other)
			}
			for _, ecn := range []uint8{NotECT, ECT1, ECT0, CE} {
				f := frameOf(t, v6, tcp, ecn, 4000, 443)
				if _, got := ParseFrame(f); got != ecn {
					t.Errorf("v6 %v: ECN read %d, sent %d", v6, got, ecn)
				}
				marked := MarkCE(f)
				if marked != (ecn != NotECT) {
					t.Errorf("v6 %v ECN %d: MarkCE %v", v6, ecn, marked)
				}
				want := ecn
				if marked {
					want = CE
				}
				if _, got := ParseFrame(f); got != want {
					t.Errorf("v6 %v ECN %d: after MarkCE %d, want %d", v6, ecn, got, want)
				}
				if !v6 && !ipv4HeaderValid(f) {
					t.Errorf("ECN %d: IPv4 checksum broken by MarkCE", ecn)
				}
				if marked {
					// The whole frame equals one built with CE from the start.
					if ref := frameOf(t, v6, tcp, CE, 4000, 443); string(ref) != string(f) {
						t.Errorf("v6 %v tcp %v ECN %d: marked frame differs from one sent with CE", v6, tcp, ecn)
					}
				}
			}
		}
	}
	// Not IP, or cut short: one flow, not ECN-capable, never marked.
	for _, f := range [][]byte{nil, make([]byte, 13), append(make([]byte, 12), 0x08, 0x06, 1, 2), frameOf(t, false, false, ECT0, 1, 2)[:30]} {
		if flow, ecn := ParseFrame(f); flow != 0 || ecn != NotECT || MarkCE(f) {
			t.Errorf("%x: flow %x ECN %d", f, flow, ecn)
		}
	}
}

// FuzzParseFrame: no frame makes the parser read out of bounds, and
// MarkCE keeps an IPv4 header's checksum valid and leaves the frame
// CE-marked exactly when it says so.
func FuzzParseFrame(f *testing.F) {
	for _, v6 := range []bool{false, true} {
		for _, ecn := range []uint8{NotECT, ECT0, CE} {
			f.Add(frameOf(f, v6, true, ecn, 1234, 80))
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		ParseFrame(frame)
		isV4 := len(frame) >= 34 && binary.BigEndian.Uint16(frame[12:14]) == 0x0800 && frame[14]>>4 == 4 && int(frame[14]&0x0f)*4 >= 20 && len(frame) >= 14+int(frame[14]&0x0f)*4
		valid := isV4 && ipv4HeaderValid(frame)
		if MarkCE(frame) {
			if _, ecn := ParseFrame(frame); ecn != CE {
				t.Fatalf("marked, but ECN reads %d", ecn)
			}
			if valid && !ipv4HeaderValid(frame) {
				t.Fatal("MarkCE broke a valid IPv4 checksum")
			}
		}
	})
}
