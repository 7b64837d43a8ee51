package remote

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The control channel: each message is a 4-byte big-endian length and a
// JSON object, at most MaxFrame bytes. The controller sends requests with
// strictly increasing sequence numbers; the agent answers each, in order.

// MaxFrame bounds a control message: no request needs more.
const MaxFrame = 64 << 10

// Version is the control protocol's version, checked at hello.
const Version = "tlab-control/3"

// The operations an agent performs.
const (
	OpPair        = "pair"         // with the one-time token: remember this controller
	OpHello       = "hello"        // versions and identities
	OpPing        = "ping"         // the agent's clock, for round trips and clock offset
	OpServe       = "serve"        // start one of tlab's servers
	OpStop        = "stop"         // stop one
	OpNoise       = "noise"        // the agent host's own noise over a short window
	OpBye         = "bye"          // end the session: everything it started stops
	OpProbe       = "probe"        // a path prober's reflector for a while
	OpProbeReport = "probe_report" // what the reflector saw, and stop it
	OpProbeFill   = "probe_fill"   // the reflector sends the controller a bounded load
	OpArrivals    = "arrivals"     // what a frame server saw, page by page
	OpBulkCounts  = "bulk_counts"  // what a bulk server received of each up flow
)

var ops = []string{OpPair, OpHello, OpPing, OpServe, OpStop, OpNoise, OpBye, OpProbe, OpProbeReport, OpProbeFill, OpArrivals, OpBulkCounts}

// Request is one controller message.
type Request struct {
	Seq  uint64          `json:"seq"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response answers the request of the same Seq: an error, or a result.
type Response struct {
	Seq    uint64          `json:"seq"`
	Error  string          `json:"error,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}

// WriteFrame writes v as one message.
func WriteFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return fmt.Errorf("control message of %d bytes is over %d", len(b), MaxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ErrFrameTooLarge refuses a message over MaxFrame before reading it.
var ErrFrameTooLarge = errors.New("control message over the size limit")

// ReadFrame reads one message's bytes.
func ReadFrame(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, MaxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("control message cut short: %w", err)
	}
	return b, nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// anything after the value.
func decodeStrict(b []byte, v any) error {
	if err := noDuplicateKeys(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the message")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the message")
	}
	return nil
}

// noDuplicateKeys refuses a message in which an object, at any depth,
// holds a key twice. encoding/json keeps the last and matches keys to
// fields without regard to case, so {"op":"ping","Op":"bye"} would be read
// as one thing by tlab and as another by a reader that keeps the first:
// keys are compared as it matches them.
func noDuplicateKeys(b []byte) error {
	// One frame per open object or array; in an object the decoder's
	// tokens alternate key, value, key, value.
	type frame struct {
		object  bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	// valueDone notes that the innermost object got a value: a key comes
	// next.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				valueDone()
				stack = append(stack, &frame{object: true, keys: map[string]bool{}, wantKey: true})
			case '[':
				valueDone()
				stack = append(stack, &frame{})
			default: // '}' or ']'
				stack = stack[:len(stack)-1]
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				top := stack[n-1]
				k := strings.ToLower(t)
				if top.keys[k] {
					return fmt.Errorf("duplicate key %q", t)
				}
				top.keys[k], top.wantKey = true, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// DecodeRequest decodes and checks a request: known fields only, a known
// operation, a sequence number from 1.
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	if err := decodeStrict(b, &r); err != nil {
		return Request{}, fmt.Errorf("malformed request: %w", err)
	}
	if r.Seq == 0 {
		return Request{}, errors.New("malformed request: sequence numbers start at 1")
	}
	if !slices.Contains(ops, r.Op) {
		return Request{}, fmt.Errorf("unknown operation %q", r.Op)
	}
	return r, nil
}

// DecodeResponse decodes a response.
func DecodeResponse(b []byte) (Response, error) {
	var r Response
	if err := decodeStrict(b, &r); err != nil {
		return Response{}, fmt.Errorf("malformed response: %w", err)
	}
	return r, nil
}

// PairArgs carries the one-time token.
type PairArgs struct {
	Token string `json:"token"`
}

// HelloArgs and HelloResult exchange versions and identities.
type HelloArgs struct {
	Version string `json:"version"`
}

// HelloResult is the agent's side of hello.
type HelloResult struct {
	Version     string `json:"version"`
	Fingerprint string `json:"fingerprint"`
	Hostname    string `json:"hostname"`
	Limits      Limits `json:"limits"`
}

// PingResult is the agent's wall clock when it answered.
type PingResult struct {
	TimeNs int64 `json:"time_ns"`
}

// Server kinds the agent runs.
const (
	KindRequestResponse = "request-response" // a protocol's Exchanger server
	KindBroker          = "broker"           // a protocol's PubSub broker (embedded)
	KindDNS             = "dns"              // study B's name server
	KindFrames          = "frames"           // a protocol's frame server (study E)
	KindBulk            = "bulk"             // the far end of cross traffic's bulk flows (Protocol tcp or quic)
)

// BulkPort is where the agent runs the far end of cross traffic's bulk
// flows (TCP, and QUIC's UDP).
const BulkPort = 4435

// ServeArgs asks for one server: a registered protocol's server or broker
// on a port, with the run's settings and certificate, or the name server.
type ServeArgs struct {
	Kind     string          `json:"kind"`
	Protocol string          `json:"protocol,omitempty"`
	Port     int             `json:"port"`
	Settings json.RawMessage `json:"settings,omitempty"`
	// CertPEM and KeyPEM are the run's throw-away server certificate
	// and key (its CA stays with the controller).
	CertPEM string `json:"cert_pem,omitempty"`
	KeyPEM  string `json:"key_pem,omitempty"`
	// Name is what the name server answers with the agent's address.
	Name string `json:"name,omitempty"`
	// Frames configures a frame server.
	Frames *FrameServeArgs `json:"frames,omitempty"`
}

// FrameServeArgs are what a frame server needs of the stream.
type FrameServeArgs struct {
	FPS          float64 `json:"fps"`
	ReassemblyMs float64 `json:"reassembly_ms"`
	ResultSize   int     `json:"result_size"`
	ProcessingMs float64 `json:"processing_ms"`
}

// ArrivalsArgs asks for a frame server's arrivals from index From on.
type ArrivalsArgs struct {
	ID   int `json:"id"`
	From int `json:"from"`
}

// WireArrival is one frame as the agent's server saw it, times on the
// agent's clock (ns); each packet is [hash, time, size].
type WireArrival struct {
	ID       uint32      `json:"id"`
	Complete bool        `json:"complete"`
	Bytes    int         `json:"bytes"`
	FirstNs  int64       `json:"first_ns"`
	LastNs   int64       `json:"last_ns"`
	Packets  [][3]uint64 `json:"packets"`
}

// ArrivalsPage is one page of arrivals; Next is where the next page
// starts, Done says there is none (so far).
type ArrivalsPage struct {
	Arrivals []WireArrival `json:"arrivals"`
	Next     int           `json:"next"`
	Done     bool          `json:"done"`
	// Dropped counts frames the server could not keep (over its bound).
	Dropped int `json:"dropped"`
}

// ServeResult names the server started, for stop.
type ServeResult struct {
	ID int `json:"id"`
}

// StopArgs names a server to stop.
type StopArgs struct {
	ID int `json:"id"`
}

// NoiseArgs asks for a host-noise sample over Ms milliseconds.
type NoiseArgs struct {
	Ms int `json:"ms"`
}

// decodeArgs decodes a request's arguments strictly (none is an empty
// object).
func decodeArgs(r Request, v any) error {
	if len(r.Args) == 0 {
		return decodeStrict([]byte("{}"), v)
	}
	if err := decodeStrict(r.Args, v); err != nil {
		return fmt.Errorf("%s: malformed arguments: %w", r.Op, err)
	}
	return nil
}
