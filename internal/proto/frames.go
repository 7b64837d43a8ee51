package proto

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"time"
)

// FrameTransport is the frames capability (CapFrames): it carries camera frames from a client to a server and a
// small result back for each (study E's offload). Frames are sent open
// loop: Send does not wait for earlier results.
//
// So that one-way delays are exact without changing any wire format, both
// ends report each datagram they send or receive by a hash of its bytes and
// a time on the process's clock (client and server run in one process); a
// stream transport reports each frame as one unit.
type FrameTransport interface {
	// ServeFrames receives frames in host n on port and calls onFrame for
	// each frame once it is whole, or once the reassembly timeout gave up
	// on it (Complete false); when onFrame returns a size above 0 for a
	// whole frame, a result of that size goes back to the client.
	ServeFrames(n Net, port int, s Settings, o FrameOptions, onFrame func(FrameArrival) int) (io.Closer, error)
	// DialFrames makes a client in host n for the server at addr.
	DialFrames(ctx context.Context, n Net, addr string, s Settings, o FrameOptions) (FrameClient, error)
}

// FrameOptions are what a frame transport needs to know of the stream.
type FrameOptions struct {
	// FPS sets RTP and MPEG-TS timestamps (90 kHz per frame interval).
	FPS float64
	// ReassemblyTimeout is how long a datagram transport's server waits
	// for a frame's missing fragments before it counts the frame lost.
	ReassemblyTimeout time.Duration
}

// The bounds every frame server holds to, whoever asks (a scenario, a
// remote controller): a reassembly timeout a ticker can keep and that lets
// go of incomplete frames within seconds, a result that fits one datagram
// (a few bounding boxes), and a frame rate a schedule can keep.
const (
	MinReassemblyTimeout = time.Millisecond
	MaxReassemblyTimeout = 10 * time.Second
	MinResultSize        = 12
	MaxResultSize        = 1400
	MaxFPS               = 1000
)

// Validate says which option is outside its bounds (a zero reassembly
// timeout means the transport's default).
func (o FrameOptions) Validate() error {
	if !(o.FPS > 0 && o.FPS <= MaxFPS) {
		return fmt.Errorf("frames: %g frames a second: want above 0 and at most %d", o.FPS, MaxFPS)
	}
	if t := o.ReassemblyTimeout; t != 0 && (t < MinReassemblyTimeout || t > MaxReassemblyTimeout) {
		return fmt.Errorf("frames: reassembly timeout %v: want %v to %v", t, MinReassemblyTimeout, MaxReassemblyTimeout)
	}
	return nil
}

// BoundedResults wraps a frame server's onFrame so that no result is
// larger than MaxResultSize, whatever the callback asks: a server
// allocates and sends what it returns.
func BoundedResults(onFrame func(FrameArrival) int) func(FrameArrival) int {
	return func(a FrameArrival) int { return min(onFrame(a), MaxResultSize) }
}

// PortUser is implemented by a transport whose server binds more than the
// port it is given (RTP's RTCP on the next one): whoever hands out ports
// (the remote agent) checks them all.
type PortUser interface {
	Ports(port int) []int
}

// FrameClient sends frames and hears their results.
type FrameClient interface {
	// Send sends frame id now and returns what went on the wire: each
	// datagram (or, for a stream, the frame) with its hash and send time.
	Send(id uint32, payload []byte) ([]Packet, error)
	// Results delivers each result as it arrives; it is closed by Close.
	Results() <-chan FrameResult
	Close() error
}

// Packet is one datagram (or a stream's whole frame) as sent or received.
type Packet struct {
	Hash uint64
	At   time.Time
	Size int
}

// FrameArrival is what the server saw of one frame.
type FrameArrival struct {
	ID       uint32
	Complete bool
	Bytes    int
	First    time.Time
	Last     time.Time
	// Packets are the frame's datagrams as they arrived (one entry for a
	// stream transport, its hash matching the sender's).
	Packets []Packet
}

// FrameResult is a result back at the client.
type FrameResult struct {
	ID uint32
	At time.Time
}

// HashBytes is the hash frame transports report datagrams by.
func HashBytes(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
