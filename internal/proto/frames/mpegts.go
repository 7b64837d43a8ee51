package frames

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"time"
	"tlab/internal/kstamp"
	"tlab/internal/proto"

	"github.com/asticode/go-astits"
)

func init() {
	proto.Register(proto.Registration{Name: "mpegts", Doc: "frames as MPEG-TS over UDP (go-astits), 7 TS packets per datagram", Impl: mpegtsFrames{}})
}

// mpegtsFrames carries frames as an MPEG transport stream over UDP, muxed
// by go-astits: each frame is private data (stream id 0xBD, stream type
// 0x06) in PES packets of at most 64000 bytes with the frame's PTS at
// 90 kHz, a PCR on the frame's first packet, PAT and PMT repeated by the
// muxer, and seven 188-byte TS packets per datagram (a frame's last
// datagram may carry fewer: waiting for the next frame would add a frame
// interval of latency). The frame's first PES starts with [id 4][length 4]
// so the server knows when it is whole; it parses the TS packets itself.
// Results go back as small application datagrams.
type mpegtsFrames struct{}

func (mpegtsFrames) Name() string { return "mpegts" }

const (
	tsPacket      = 188
	tsPerDatagram = 7
	tsPID         = 0x100
	tsStreamID    = 0xBD // private_stream_1
	tsMaxPES      = 64000
)

type tsServer struct {
	udp  *net.UDPConn
	in   *kstamp.Conn // udp, read with the kernel's receive times
	re   *reassembler
	done chan struct{}

	mu     sync.Mutex
	peer   *net.UDPAddr
	frames map[int64]*tsFrame // by PTS
	cur    int64              // PTS of the PES being received
}

type tsFrame struct {
	id     uint32
	length int
	known  bool
}

func (mpegtsFrames) ServeFrames(n proto.Net, port int, _ proto.Settings, o proto.FrameOptions, onFrame func(proto.FrameArrival) int) (io.Closer, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	onFrame = proto.BoundedResults(onFrame)
	udp, err := n.ListenUDP(&net.UDPAddr{Port: port})
	if err != nil {
		return nil, err
	}
	if err := growReadBuffer(udp); err != nil {
		udp.Close()
		return nil, fmt.Errorf("mpegts frames: receive buffer: %w", err)
	}
	in, err := kstamp.Stamp(udp)
	if err != nil {
		udp.Close()
		return nil, fmt.Errorf("mpegts frames: %w", err)
	}
	s := &tsServer{udp: udp, in: in, frames: map[int64]*tsFrame{}, done: make(chan struct{}), cur: -1}
	s.re = newReassembler(o.ReassemblyTimeout, func(a proto.FrameArrival) {
		if size := onFrame(a); size > 0 && a.Complete {
			s.mu.Lock()
			peer := s.peer
			s.mu.Unlock()
			if peer != nil {
				udp.WriteToUDP(resultDatagram(a.ID, size), peer)
			}
		}
	})
	go s.serve()
	return proto.CloserFunc(func() error {
		err := udp.Close()
		<-s.done
		s.re.close()
		return err
	}), nil
}

func (s *tsServer) serve() {
	defer close(s.done)
	buf := make([]byte, 65536)
	for dg := 0; ; dg++ {
		n, from, ns, err := s.in.ReadStamped(buf)
		if err != nil {
			return
		}
		at := time.Unix(0, ns)
		d := buf[:n]
		s.mu.Lock()
		s.peer = from
		var id uint32
		var length, payload int
		known := false
		for off := 0; off+tsPacket <= len(d); off += tsPacket {
			data, ok := s.esPayload(d[off : off+tsPacket])
			if !ok {
				continue
			}
			f := s.frames[s.cur]
			if f == nil {
				continue
			}
			if !f.known && len(data) >= 8 {
				f.id, f.length, f.known = binary.BigEndian.Uint32(data[0:4]), int(binary.BigEndian.Uint32(data[4:8])), true
				data = data[8:]
			}
			if f.known {
				id, length, known = f.id, f.length, true
				payload += len(data)
			}
		}
		s.mu.Unlock()
		if known {
			s.re.add(id, dg, payload, proto.Packet{Hash: proto.HashBytes(d), At: at, Size: n}, func(_, bytes int) bool { return bytes >= length })
		}
	}
}

// esPayload returns the elementary-stream bytes one TS packet carries for
// tsPID, after the PES header when the packet starts a PES (whose PTS then
// becomes the current frame).
func (s *tsServer) esPayload(p []byte) ([]byte, bool) {
	if p[0] != 0x47 {
		return nil, false
	}
	pusi := p[1]&0x40 != 0
	pid := uint16(p[1]&0x1f)<<8 | uint16(p[2])
	afc := p[3] >> 4 & 3
	if pid != tsPID || afc&1 == 0 {
		return nil, false
	}
	off := 4
	if afc&2 != 0 {
		off += 1 + int(p[4])
	}
	if off >= tsPacket {
		return nil, false
	}
	data := p[off:]
	if pusi {
		if len(data) < 9 || data[0] != 0 || data[1] != 0 || data[2] != 1 {
			return nil, false
		}
		hdl := int(data[8])
		if data[7]>>6&2 == 0 || len(data) < 9+hdl || hdl < 5 {
			return nil, false
		}
		pts := int64(data[9]>>1&7)<<30 | int64(data[10])<<22 | int64(data[11]>>1)<<15 | int64(data[12])<<7 | int64(data[13]>>1)
		if s.frames[pts] == nil {
			s.frames[pts] = &tsFrame{}
		}
		s.cur = pts
		data = data[9+hdl:]
	}
	return data, true
}

type tsClient struct {
	udp     *net.UDPConn
	server  *net.UDPAddr
	mx      *astits.Muxer
	out     bytes.Buffer
	ticks   int64 // 90 kHz per frame
	mu      sync.Mutex
	results chan proto.FrameResult
	done    chan struct{}
}

func (mpegtsFrames) DialFrames(_ context.Context, n proto.Net, addr string, _ proto.Settings, o proto.FrameOptions) (proto.FrameClient, error) {
	udp, server, err := udpTowards(n, addr)
	if err != nil {
		return nil, err
	}
	fps := o.FPS
	if fps <= 0 {
		fps = 30
	}
	c := &tsClient{udp: udp, server: server, ticks: int64(math.Round(90000 / fps)), results: make(chan proto.FrameResult, 4096), done: make(chan struct{})}
	c.mx = astits.NewMuxer(context.Background(), &c.out)
	if err := c.mx.AddElementaryStream(astits.PMTElementaryStream{ElementaryPID: tsPID, StreamType: astits.StreamTypePrivateData}); err != nil {
		udp.Close()
		return nil, fmt.Errorf("mpegts: %w", err)
	}
	c.mx.SetPCRPID(tsPID)
	go readResults(udp, c.results, c.done)
	return c, nil
}

func (c *tsClient) Send(id uint32, payload []byte) ([]proto.Packet, error) {
	frame := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint32(frame[0:4], id)
	binary.BigEndian.PutUint32(frame[4:8], uint32(len(payload)))
	copy(frame[8:], payload)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.Reset()
	pts := astits.ClockReference{Base: int64(id) * c.ticks}
	for off := 0; off < len(frame); off += tsMaxPES {
		var af *astits.PacketAdaptationField
		if off == 0 {
			pcr := pts
			af = &astits.PacketAdaptationField{RandomAccessIndicator: true, HasPCR: true, PCR: &pcr}
		}
		ptsCopy := pts
		_, err := c.mx.WriteData(&astits.MuxerData{PID: tsPID, AdaptationField: af, PES: &astits.PESData{
			Header: &astits.PESHeader{StreamID: tsStreamID, OptionalHeader: &astits.PESOptionalHeader{
				MarkerBits: 2, PTSDTSIndicator: astits.PTSDTSIndicatorOnlyPTS, PTS: &ptsCopy}},
			Data: frame[off:min(off+tsMaxPES, len(frame))],
		}})
		if err != nil {
			return nil, fmt.Errorf("mpegts mux: %w", err)
		}
	}
	ts := c.out.Bytes()
	var sent []proto.Packet
	for off := 0; off < len(ts); off += tsPacket * tsPerDatagram {
		d := ts[off:min(off+tsPacket*tsPerDatagram, len(ts))]
		h, at := proto.HashBytes(d), time.Now()
		if _, err := c.udp.WriteToUDP(d, c.server); err != nil {
			return sent, err
		}
		sent = append(sent, proto.Packet{Hash: h, At: at, Size: len(d)})
	}
	return sent, nil
}

func (c *tsClient) Results() <-chan proto.FrameResult { return c.results }

func (c *tsClient) Close() error {
	err := c.udp.Close()
	<-c.done
	return err
}
