package flowsim

import "time"

// QuicGo models the receive-window auto-tuning of quic-go (v0.65,
// flow_controller_base.go), so that the simulator can predict what the real
// stack does through tlab's emulated link:
//
//   - an update is sent once a quarter of the window has been consumed
//     (protocol.WindowUpdateThreshold = 0.25), not a half as in the study;
//   - growth is judged over an epoch that starts with the first data
//     received and restarts after every judgement: once more than half the
//     window has been read in the epoch, the window doubles (up to its upper
//     bound) if the epoch lasted less than 4 × fraction × RTT, fraction being
//     the part of the window read in it; that is, when half a window took
//     less than two RTTs;
//   - when a stream window grows, the connection window grows to at least
//     1.5 times it (Chromium's ConnectionFlowControlMultiplier), and the
//     connection's epoch restarts (see StreamGrew).
//
// With the initial window equal to the upper bound it is quic-go's static
// configuration: the window never grows, and updates still come at a
// quarter.
type QuicGo struct{}

func (QuicGo) Name() string { return "quic-go" }

func (QuicGo) Update(w *Window, now, rtt time.Duration, mss int64) bool {
	if w.MaxOffset-w.Consumed > w.Size*3/4 {
		return false
	}
	if read := w.Consumed - w.EpochOffset; read > w.Size/2 {
		fraction := float64(read) / float64(w.Size)
		if now-w.EpochStart < time.Duration(4*fraction*float64(rtt)) {
			w.Size = min(2*w.Size, w.Upper)
		}
		w.EpochStart, w.EpochOffset = now, w.Consumed
	}
	w.MaxOffset = w.Consumed + w.Size
	w.LastUpdate = now
	return true
}

// StreamGrew raises the connection window to 1.5 times a stream window that
// just grew, as quic-go's EnsureMinimumWindowSize does.
func (QuicGo) StreamGrew(conn, stream *Window, now time.Duration) {
	want := stream.Size * 3 / 2
	if want <= conn.Size {
		return
	}
	conn.Size = min(want, conn.Upper)
	conn.EpochStart, conn.EpochOffset = now, conn.Consumed
}

// ConnectionCoupler is implemented by allowances that enlarge the connection
// window when a stream window grows. The simulator calls StreamGrew after
// the stream's update and before the connection's.
type ConnectionCoupler interface {
	StreamGrew(conn, stream *Window, now time.Duration)
}
