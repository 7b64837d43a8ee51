package frames

import (
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

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

func init() {
	proto.Register(proto.Registration{Name: "rtp", Doc: "frames as RTP over UDP (pion), with RTCP sender reports", Impl: rtpFrames{}})
}

// rtpFrames carries frames as RTP over UDP (RFC 3550), packetised by pion:
// 90 kHz timestamps, one timestamp per frame, the marker bit on a frame's
// last packet, dynamic payload type 96. RTCP runs beside it on the next
// port: the client sends sender reports every second, the server answers
// with receiver reports (loss, interarrival jitter). Results go back to the
// client's RTP port as small application datagrams.
//
// Every packet carries its frame's id and length in an RFC 8285 one-byte
// header extension (id 1), so the server can tell which frame a packet
// belongs to and when the frame is whole, whichever packets are lost; a
// frame whose packets do not all arrive within the reassembly timeout is
// lost.
type rtpFrames struct{}

func (rtpFrames) Name() string { return "rtp" }

const (
	rtpPayloadType = 96
	rtpClockRate   = 90000
	rtpMTU         = 1472 // UDP payload under a 1500-byte MTU
	rtpSSRC        = 0x746c6162
	rtpFrameExtID  = 1
)

// rawPayloader splits a frame into chunks of at most mtu bytes: the frame
// is opaque camera data, not a codec's bitstream.
type rawPayloader struct{}

func (rawPayloader) Payload(mtu uint16, payload []byte) [][]byte {
	var out [][]byte
	for len(payload) > int(mtu) {
		out = append(out, payload[:mtu])
		payload = payload[mtu:]
	}
	return append(out, payload)
}

type rtpServer struct {
	udp, rtcpConn *net.UDPConn
	in, rtcpIn    *kstamp.Conn // udp and rtcpConn, read with the kernel's receive times
	re            *reassembler
	done          chan struct{}

	// stream and reports are the client's RTP and RTCP addresses: the
	// first to send a frame's packet and a sender report (firstPeer).
	stream, reports firstPeer

	mu        sync.Mutex
	received  uint32
	highest   uint16
	started   bool
	jitter    float64 // RFC 3550 interarrival jitter, timestamp units
	lastTrans float64
	base      time.Time
}

// Ports: the RTP server binds port for RTP and port+1 for RTCP.
func (rtpFrames) Ports(port int) []int { return []int{port, port + 1} }

func (rtpFrames) ServeFrames(n proto.Net, port int, _ proto.Settings, o proto.FrameOptions, onFrame func(proto.FrameArrival) int) (io.Closer, error) {
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
		return nil, fmt.Errorf("rtp frames: receive buffer: %w", err)
	}
	rc, err := n.ListenUDP(&net.UDPAddr{Port: port + 1})
	if err != nil {
		udp.Close()
		return nil, err
	}
	s := &rtpServer{udp: udp, rtcpConn: rc, done: make(chan struct{}), base: time.Now()}
	if s.in, err = kstamp.Stamp(udp); err == nil {
		s.rtcpIn, err = kstamp.Stamp(rc)
	}
	if err != nil {
		udp.Close()
		rc.Close()
		return nil, fmt.Errorf("rtp frames: %w", err)
	}
	results := newResultAllowance(o.FPS)
	s.re = newReassembler(o.ReassemblyTimeout, func(a proto.FrameArrival) {
		if size := onFrame(a); size > 0 && a.Complete && results.take(time.Now()) {
			if peer := s.stream.get(); peer != nil {
				udp.WriteToUDP(resultDatagram(a.ID, size), peer)
			}
		}
	})
	go s.serveRTP()
	go s.serveRTCP()
	return proto.CloserFunc(func() error {
		err := udp.Close()
		rc.Close()
		<-s.done
		s.re.close()
		return err
	}), nil
}

func (s *rtpServer) serveRTP() {
	defer close(s.done)
	buf := make([]byte, 65536)
	for {
		n, from, at, err := readFromPeer(s.in, buf)
		if err != nil {
			return
		}
		d := append([]byte(nil), buf[:n]...)
		var p rtp.Packet
		if p.Unmarshal(d) != nil {
			continue
		}
		id, length, ok := frameExtension(&p)
		if !s.stream.admit(s.udp, from, ok) {
			continue
		}
		s.mu.Lock()
		s.account(p, at)
		s.mu.Unlock()
		if !ok {
			continue
		}
		s.re.add(id, int(p.SequenceNumber), len(p.Payload), proto.Packet{Hash: proto.HashBytes(d), At: at, Size: n},
			func(_, bytes int) bool { return bytes >= length })
	}
}

// account keeps RFC 3550's receiver statistics.
func (s *rtpServer) account(p rtp.Packet, at time.Time) {
	s.received++
	if !s.started || int16(p.SequenceNumber-s.highest) > 0 {
		s.highest = p.SequenceNumber
	}
	transit := at.Sub(s.base).Seconds()*rtpClockRate - float64(p.Timestamp)
	if s.started {
		s.jitter += (math.Abs(transit-s.lastTrans) - s.jitter) / 16
	}
	s.lastTrans, s.started = transit, true
}

// serveRTCP answers each sender report with a receiver report.
func (s *rtpServer) serveRTCP() {
	buf := make([]byte, 1500)
	for {
		n, from, _, err := readFromPeer(s.rtcpIn, buf)
		if err != nil {
			return
		}
		pkts, err := rtcp.Unmarshal(buf[:n])
		if err != nil || !s.reports.admit(s.rtcpConn, from, len(pkts) > 0) {
			continue
		}
		for _, p := range pkts {
			sr, ok := p.(*rtcp.SenderReport)
			if !ok {
				continue
			}
			s.mu.Lock()
			lost := int64(sr.PacketCount) - int64(s.received)
			rr := &rtcp.ReceiverReport{SSRC: rtpSSRC + 1, Reports: []rtcp.ReceptionReport{{
				SSRC: sr.SSRC, TotalLost: uint32(max(lost, 0)), LastSequenceNumber: uint32(s.highest),
				Jitter: uint32(s.jitter), LastSenderReport: uint32(sr.NTPTime >> 16),
			}}}
			if sr.PacketCount > 0 && lost > 0 {
				rr.Reports[0].FractionLost = uint8(min(255, lost*256/int64(sr.PacketCount)))
			}
			s.mu.Unlock()
			if b, err := rr.Marshal(); err == nil {
				s.rtcpConn.WriteToUDP(b, from)
			}
		}
	}
}

type rtpClient struct {
	udp, rtcpConn *net.UDPConn
	server, rtcpS *net.UDPAddr
	pk            rtp.Packetizer
	samples       uint32
	results       chan proto.FrameResult
	done          chan struct{}
	stop          chan struct{}

	mu             sync.Mutex
	packets, bytes uint32
	lastTS         uint32
}

func (rtpFrames) DialFrames(_ context.Context, n proto.Net, addr string, _ proto.Settings, o proto.FrameOptions) (proto.FrameClient, error) {
	udp, server, err := udpTowards(n, addr)
	if err != nil {
		return nil, err
	}
	rc, err := n.ListenUDP(&net.UDPAddr{})
	if err != nil {
		udp.Close()
		return nil, err
	}
	fps := o.FPS
	if fps <= 0 {
		fps = 30
	}
	c := &rtpClient{udp: udp, rtcpConn: rc, server: server, rtcpS: &net.UDPAddr{IP: server.IP, Port: server.Port + 1},
		// The extension takes 12 bytes of each packet's room.
		pk:      rtp.NewPacketizer(rtpMTU-12, rtpPayloadType, rtpSSRC, rawPayloader{}, rtp.NewFixedSequencer(0), rtpClockRate),
		samples: uint32(math.Round(rtpClockRate / fps)), results: make(chan proto.FrameResult, 4096), done: make(chan struct{}), stop: make(chan struct{})}
	go readResults(udp, c.results, c.done)
	go c.senderReports()
	go func() { // receiver reports: read and drop (the server's view)
		buf := make([]byte, 1500)
		for {
			if _, _, err := rc.ReadFromUDP(buf); err != nil {
				return
			}
		}
	}()
	return c, nil
}

// senderReports sends an RTCP sender report every second.
func (c *rtpClient) senderReports() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			c.mu.Lock()
			sr := &rtcp.SenderReport{SSRC: rtpSSRC, NTPTime: ntpTime(now), RTPTime: c.lastTS, PacketCount: c.packets, OctetCount: c.bytes}
			c.mu.Unlock()
			if b, err := sr.Marshal(); err == nil {
				c.rtcpConn.WriteToUDP(b, c.rtcpS)
			}
		}
	}
}

// ntpTime is t in NTP's 64-bit fixed point (seconds since 1900).
func ntpTime(t time.Time) uint64 {
	const offset = 2208988800
	secs := uint64(t.Unix()) + offset
	frac := uint64(t.Nanosecond()) << 32 / 1e9
	return secs<<32 | frac
}

// frameExtensionBytes is the header extension every packet of a frame
// carries: the frame's id and its length in bytes.
func frameExtensionBytes(id uint32, length int) []byte {
	var ext [8]byte
	binary.BigEndian.PutUint32(ext[0:4], id)
	binary.BigEndian.PutUint32(ext[4:8], uint32(length))
	return ext[:]
}

// frameExtension reads a packet's frame id and length; ok is false when
// the packet has no such extension or a length beyond what a frame may
// be (a peer's word, bounded before the reassembler counts bytes to it).
func frameExtension(p *rtp.Packet) (id uint32, length int, ok bool) {
	ext := p.GetExtension(rtpFrameExtID)
	if len(ext) != 8 {
		return 0, 0, false
	}
	id, n := binary.BigEndian.Uint32(ext[0:4]), binary.BigEndian.Uint32(ext[4:8])
	if int64(n) > proto.MaxMessage {
		return 0, 0, false
	}
	return id, int(n), true
}

func (c *rtpClient) Send(id uint32, payload []byte) ([]proto.Packet, error) {
	ext := frameExtensionBytes(id, len(payload))
	c.mu.Lock()
	pkts := c.pk.Packetize(payload, c.samples)
	c.mu.Unlock()
	var sent []proto.Packet
	for _, p := range pkts {
		if err := p.SetExtension(rtpFrameExtID, ext); err != nil {
			return sent, err
		}
		b, err := p.Marshal()
		if err != nil {
			return sent, err
		}
		h, at := proto.HashBytes(b), time.Now()
		if _, err := c.udp.WriteToUDP(b, c.server); err != nil {
			return sent, err
		}
		sent = append(sent, proto.Packet{Hash: h, At: at, Size: len(b)})
		c.mu.Lock()
		c.packets++
		c.bytes += uint32(len(p.Payload))
		c.lastTS = p.Timestamp
		c.mu.Unlock()
	}
	return sent, nil
}

func (c *rtpClient) Results() <-chan proto.FrameResult { return c.results }

func (c *rtpClient) Close() error {
	close(c.stop)
	err := c.udp.Close()
	c.rtcpConn.Close()
	<-c.done
	return err
}
