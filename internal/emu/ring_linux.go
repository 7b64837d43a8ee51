//go:build linux

package emu

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rxRing is a packet socket's memory-mapped receive ring (TPACKET_V2): the
// kernel writes each frame into the next slot with its receive timestamp
// and hands the slot over by its status word; the loop reads the slot and
// hands it back. Reading costs no system call, so a busy loop polls it for
// free. TPACKET_V3 is not used: its blocks are handed over when full or
// after a timeout of at least one jiffy (4 ms here), which a latency lab
// cannot wait for when traffic is sparse.
//
// The ring lives as long as the engine's process: the kernel unmaps it and
// frees it with the socket when the process exits.
type rxRing struct {
	mem       []byte
	frameSize int
	frames    int
	head      int // the next slot the kernel fills, in order
}

// Ring geometry: 64 KiB blocks (order-4 pages, which the kernel finds even
// when memory is fragmented) and 8 MiB a port, the receive buffer the
// recvmmsg engine asks for.
const (
	ringBlockSize = 1 << 16
	ringBytes     = 8 << 20
)

// ringFrameSize is a slot big enough for a frame of mtu bytes: the kernel
// puts the Ethernet header at TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - 14, 66
// bytes in, and the slot size must be a multiple of TPACKET_ALIGNMENT. A
// power of two keeps slots from straddling blocks.
func ringFrameSize(mtu int) int {
	need := 80 + 14 + 4 + mtu // headers, Ethernet, a VLAN tag, payload
	size := unix.TPACKET_ALIGNMENT
	for size < need {
		size *= 2
	}
	return size
}

// newRxRing sets up the receive ring on packet socket fd for frames of up
// to mtu bytes and maps it.
func newRxRing(fd, mtu int) (*rxRing, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return nil, fmt.Errorf("PACKET_VERSION TPACKET_V2: %w", err)
	}
	frameSize := ringFrameSize(mtu)
	blockSize := max(ringBlockSize, frameSize)
	blocks := max(ringBytes/blockSize, 1)
	req := unix.TpacketReq{
		Block_size: uint32(blockSize),
		Block_nr:   uint32(blocks),
		Frame_size: uint32(frameSize),
		Frame_nr:   uint32(blocks * (blockSize / frameSize)),
	}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("PACKET_RX_RING (%d blocks of %d bytes, %d-byte slots): %w", blocks, blockSize, frameSize, err)
	}
	mem, err := unix.Mmap(fd, 0, blocks*blockSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_LOCKED)
	if err != nil {
		// MAP_LOCKED can fail under a memlock limit; the ring works
		// unlocked, at the risk of a page fault on the timing path.
		if mem, err = unix.Mmap(fd, 0, blocks*blockSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
			return nil, fmt.Errorf("mapping the receive ring: %w", err)
		}
	}
	return &rxRing{mem: mem, frameSize: frameSize, frames: int(req.Frame_nr)}, nil
}

// slot is the header of slot i.
func (r *rxRing) slot(i int) *unix.Tpacket2Hdr {
	return (*unix.Tpacket2Hdr)(unsafe.Pointer(&r.mem[i*r.frameSize]))
}

// next returns the frame at the head of the ring, when the kernel has
// handed it over: its bytes as captured (valid until done), its length on
// the wire, its receive time (ns on CLOCK_REALTIME) and whether the kernel
// could not fit it in the slot.
func (r *rxRing) next() (frame []byte, wireLen int, stampNs int64, truncated, ok bool) {
	h := r.slot(r.head)
	// The status word is the handover: loading it with acquire order
	// makes the kernel's writes to the slot visible.
	status := atomic.LoadUint32(&h.Status)
	if status&unix.TP_STATUS_USER == 0 {
		return nil, 0, 0, false, false
	}
	start := r.head*r.frameSize + int(h.Mac)
	end := min(start+int(h.Snaplen), (r.head+1)*r.frameSize)
	return r.mem[start:end], int(h.Len), int64(h.Sec)*1e9 + int64(h.Nsec), status&unix.TP_STATUS_COPY != 0 || int(h.Snaplen) < int(h.Len), true
}

// done hands the head slot back to the kernel and moves on.
func (r *rxRing) done() {
	atomic.StoreUint32(&r.slot(r.head).Status, unix.TP_STATUS_KERNEL)
	r.head++
	if r.head == r.frames {
		r.head = 0
	}
}

// ready says whether a frame waits at the head.
func (r *rxRing) ready() bool {
	return atomic.LoadUint32(&r.slot(r.head).Status)&unix.TP_STATUS_USER != 0
}
