package emu

import "encoding/binary"

// ParseFrame reads what the queue disciplines need from an Ethernet
// frame: a hash of its transport flow (addresses, protocol, ports) and its
// IP header's ECN field. A frame that is not IPv4 or IPv6, or too short to
// say, has flow 0 and ECN NotECT: it is queued as one flow and never
// marked. It never reads beyond the frame.
func ParseFrame(frame []byte) (flow uint32, ecn uint8) {
	if len(frame) < 14 {
		return 0, NotECT
	}
	h := uint32(2166136261) // FNV-1a
	mix := func(b []byte) {
		for _, c := range b {
			h ^= uint32(c)
			h *= 16777619
		}
	}
	ip := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case 0x0800: // IPv4
		if len(ip) < 20 || ip[0]>>4 != 4 {
			return 0, NotECT
		}
		ihl := int(ip[0]&0x0f) * 4
		ecn = ip[1] & 3
		mix(ip[9:10])  // protocol
		mix(ip[12:20]) // addresses
		// Ports, unless a fragment other than the first.
		if ihl >= 20 && binary.BigEndian.Uint16(ip[6:8])&0x1fff == 0 && len(ip) >= ihl+4 {
			mix(ip[ihl : ihl+4])
		}
	case 0x86dd: // IPv6
		if len(ip) < 40 || ip[0]>>4 != 6 {
			return 0, NotECT
		}
		ecn = (ip[1] >> 4) & 3
		mix(ip[6:7])  // next header
		mix(ip[8:40]) // addresses
		if len(ip) >= 44 {
			mix(ip[40:44])
		}
	default:
		return 0, NotECT
	}
	return h, ecn
}

// MarkCE sets CE in an ECN-capable frame's IP header, fixing IPv4's header
// checksum (RFC 1624's incremental update), and tells whether it did: a
// frame that is not ECN-capable is left as it is.
func MarkCE(frame []byte) bool {
	if len(frame) < 14 {
		return false
	}
	ip := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[1]&3 == NotECT {
			return false
		}
		old := binary.BigEndian.Uint16(ip[0:2])
		ip[1] |= CE
		updated := binary.BigEndian.Uint16(ip[0:2])
		// HC' = ~(~HC + ~m + m')
		sum := uint32(^binary.BigEndian.Uint16(ip[10:12])) + uint32(^old) + uint32(updated)
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		binary.BigEndian.PutUint16(ip[10:12], ^uint16(sum))
		return true
	case 0x86dd:
		if len(ip) < 40 || ip[0]>>4 != 6 || (ip[1]>>4)&3 == NotECT {
			return false
		}
		ip[1] |= CE << 4
		return true
	}
	return false
}
