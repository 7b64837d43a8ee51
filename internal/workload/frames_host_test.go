package workload

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"tlab/internal/proto"
)

// farFrameHosts is a toy host that plays the server's role on "another
// machine", as a tlab agent across a real path does: asked for a frame
// server (Serving), it runs one of its own and keeps what it saw, and
// tells the workload's sink only when closed, every frame at once and in
// reverse order (another machine cannot call back as frames come), its
// clock off by uncertaintyMs.
type farFrameHosts struct {
	fakeHosts
	uncertaintyMs float64
	asked         []string
}

// keptFrames is the far host's own sink: it keeps the frames.
type keptFrames struct{ frames []proto.FrameArrival }

func (k *keptFrames) ClockUncertainty(float64)         {}
func (k *keptFrames) Frame(a proto.FrameArrival)       { k.frames = append(k.frames, a) }
func (k *keptFrames) Arrived(all []proto.FrameArrival) { k.frames = append(k.frames, all...) }

func (h *farFrameHosts) Serve(role, kind string, r ServerRequest) (io.Closer, error) {
	h.asked = append(h.asked, role+" "+kind)
	if kind != ServerFrames || r.Frames == nil {
		return nil, fmt.Errorf("the toy far host serves frames only, not %s", kind)
	}
	workloadSink, kept := r.Frames.Sink, &keptFrames{}
	own := *r.Frames
	own.Sink = kept
	r.Frames = &own
	srv, err := StartServerIn(h.Net(role), kind, r)
	if err != nil {
		return nil, err
	}
	workloadSink.ClockUncertainty(h.uncertaintyMs)
	return closer(func() error {
		err := srv.Close()
		slices.Reverse(kept.frames)
		workloadSink.Arrived(kept.frames)
		return err
	}), nil
}

type closer func() error

func (c closer) Close() error { return c() }

// TestFramesServedWhereverTheHostRunsThem: the frames workload asks the
// server's host for its frame server in one way, and a host that runs it
// elsewhere (the toy far host: every frame told at once when it closes,
// in reverse order, on a clock known within 3 ms) gives the same
// accounting as the server in this process: the expected records are
// TestFramesRunOverAMemoryTransport's (12 frames, 2 of warm-up, every
// fourth dropped before the server, each other answered with its 10 B
// result; 3 of the 10 measured packets lost), and the one-way delays'
// stated uncertainty is the far clock's 3 ms (0 for this process's).
func TestFramesServedWhereverTheHostRunsThem(t *testing.T) {
	f := Frames{FPS: 200, Size: 1000, ResultSize: 10, Count: 10, Warmup: 10 * time.Millisecond, Reassembly: 10 * time.Millisecond}
	for _, c := range []struct {
		name          string
		far           bool
		uncertaintyMs float64
	}{{"this process", false, 0}, {"the toy far host", true, 3}} {
		t.Run(c.name, func(t *testing.T) {
			env, rec := newEnv(t, "mem", &memFrames{dropEvery: 4}, fakeHosts{})
			far := &farFrameHosts{uncertaintyMs: c.uncertaintyMs}
			if c.far {
				env.Hosts = far
			}
			if err := f.Run(context.Background(), env); err != nil {
				t.Fatal(err)
			}
			if c.far && !slices.Equal(far.asked, []string{"server " + ServerFrames}) {
				t.Errorf("the far host was asked for %q, want the server's frame server once", far.asked)
			}
			if len(rec.records) != 12 {
				t.Fatalf("%d records, want 12", len(rec.records))
			}
			for i, r := range rec.records {
				dropped := (i+1)%4 == 0
				switch {
				case dropped && r.Error != "lost: no packet of the frame reached the server":
					t.Errorf("frame %d was dropped, record says %q", i, r.Error)
				case !dropped && (r.Error != "" || r.RespBytes != 10 || r.Extra["packets_arrived"] != 1):
					t.Errorf("frame %d: %+v", i, r)
				}
			}
			if got := rec.notes["packets_lost_pct"]; got != 30 {
				t.Errorf("packets_lost_pct %v, want 30", got)
			}
			if got, ok := rec.notes["owd_offset_uncertainty_ms"]; !ok || got != c.uncertaintyMs {
				t.Errorf("owd_offset_uncertainty_ms %v (noted %v), want %v", got, ok, c.uncertaintyMs)
			}
		})
	}
}
