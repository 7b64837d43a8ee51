package workload

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"tlab/internal/untrusted"
)

// generated is a reader of head, then n elements made by elem, joined by
// commas, then tail, made as it is read: the file is never in memory.
type generated struct {
	head, tail string
	sep        string // between elements; "," when empty
	n, i       int
	elem       func(i int) string
	buf        strings.Reader
	done       bool
}

func (g *generated) Read(p []byte) (int, error) {
	for g.buf.Len() == 0 {
		switch {
		case g.done:
			return 0, io.EOF
		case g.i == 0 && g.head != "":
			g.buf.Reset(g.head)
			g.head = ""
		case g.i < g.n:
			s := g.elem(g.i)
			if g.i > 0 {
				s = cmp.Or(g.sep, ",") + s
			}
			g.i++
			g.buf.Reset(s)
		default:
			g.buf.Reset(g.tail)
			g.done = true
		}
	}
	return g.buf.Read(p)
}

// peakHeap is the most heap fn held live beyond what was live before it,
// sampled every millisecond with the collector run at a tenth of the
// live heap's growth (GOGC=10), so that garbage counts little: a buffer
// held through a decode of seconds is seen, a short-lived one mostly not.
func peakHeap(fn func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	return peak.Load()
}

// padding is the part of a real round trip or interval tlab does not
// read (irtt's delays and IPDV, iperf3's per-stream figures), 2 KiB here.
var padding = `"other":{"a":[` + strings.Repeat(`123456789.5,`, 170) + `0],"s":"` + strings.Repeat("x", 20) + `"}`

// TestIrttAndIperf3JSONDecodeInMemoryOfTheEvents: 20 000 round trips (or
// intervals) of about 2 KiB each, 40 MiB of JSON, are decoded holding
// memory for the events kept, not for the file: at most four times the
// kept structures (the raw element and the event, slices grown by
// doubling) and 4 MiB (the collector's slack, the decoder's buffer).
// Reading the file whole held at least its own size, 40 MiB, through the
// decode.
func TestIrttAndIperf3JSONDecodeInMemoryOfTheEvents(t *testing.T) {
	const n = 20_000
	kept := uint64(n * (unsafe.Sizeof(Event{}) + max(unsafe.Sizeof(irttRoundTrip{}), unsafe.Sizeof(iperf3Interval{}))))
	bound := 4*kept + 4<<20
	for _, c := range []struct {
		format string
		file   func() io.Reader
	}{
		{EventsIrtt, func() io.Reader {
			return &generated{head: `{"config":{"length":60},"stats":{` + padding + `},"round_trips":[`, tail: `]}`, n: n, elem: func(i int) string {
				return fmt.Sprintf(`{"seqno":%d,"lost":"false",%s,"timestamps":{"client":{"send":{"wall":%d},"receive":{"wall":%d}}}}`, i, padding, 1e9+i*1e6, 1e9+i*1e6+5e5)
			}}
		}},
		{EventsIperf3, func() io.Reader {
			return &generated{head: `{"start":{"timestamp":{"timesecs":1}},"intervals":[`, tail: `],"end":{` + padding + `}}`, n: n, elem: func(i int) string {
				return fmt.Sprintf(`{"streams":[{%s}],"sum":{"start":%d,"end":%d,"bytes":1000}}`, padding, i, i+1)
			}}
		}},
	} {
		var size int64
		io.Copy(io.Discard, &countingReader{r: c.file(), n: &size})
		var evs []Event
		var err error
		got := peakHeap(func() { evs, err = ParseEvents(c.format, c.format+".json", c.file()) })
		if err != nil || len(evs) != n {
			t.Fatalf("%s: %d events, %v", c.format, len(evs), err)
		}
		t.Logf("%s: %d MiB of JSON, peak heap %.1f MiB (bound %.1f MiB)", c.format, size>>20, float64(got)/(1<<20), float64(bound)/(1<<20))
		if got > bound {
			t.Errorf("%s: decoding %d MiB held %.1f MiB at its peak, more than %.1f MiB for %d events", c.format, size>>20, float64(got)/(1<<20), float64(bound)/(1<<20), n)
		}
	}
}

type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	*c.n += int64(k)
	return k, err
}

// TestEventsStopAtTheOneTooMany: an endless stream of valid events is
// refused once the cap's one too many is read (not read to its end
// first), in each format; the cap is 1000 here (MaxEvents in use).
func TestEventsStopAtTheOneTooMany(t *testing.T) {
	const limit = 1000
	line := func(i int) string {
		return fmt.Sprintf(`{"seq":%d,"sent_ns":%d,"done_ns":%d,"req_bytes":1,"resp_bytes":1,"error":""}`, i, 1+i, 2+i)
	}
	endlessOf := func(head, sep string, elem func(int) string) io.Reader {
		return &generated{head: head, sep: sep, n: 1 << 62, elem: elem}
	}
	for _, c := range []struct {
		format string
		parse  func(string, io.Reader, int) ([]Event, error)
		r      io.Reader
	}{
		{EventsJSONL, parseJSONLEvents, endlessOf("", "\n", line)},
		{EventsCSV, parseCSVEvents, endlessOf("seq,sent_ns,done_ns\n", "\n", func(i int) string { return fmt.Sprintf("%d,%d,%d", i, 1+i, 2+i) })},
		{EventsIrtt, parseIrttEvents, endlessOf(`{"round_trips":[`, "", func(i int) string { return fmt.Sprintf(`{"seqno":%d,"lost":"true"}`, i) })},
		{EventsIperf3, parseIperf3Events, endlessOf(`{"intervals":[`, "", func(i int) string { return fmt.Sprintf(`{"sum":{"start":%d,"end":%d,"bytes":1}}`, i, i+1) })},
	} {
		done := make(chan error, 1)
		go func() { _, err := c.parse("endless", c.r, limit); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, errTooManyEvents) || !strings.Contains(err.Error(), "(1000)") {
				t.Errorf("%s: %v, want %v naming the cap", c.format, err, errTooManyEvents)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: still reading the endless stream after 20 s", c.format)
		}
	}
}

// TestEventsFileOverTheCapIsRefused: what is read stops at the cap with
// an error naming the file and the cap.
func TestEventsFileOverTheCapIsRefused(t *testing.T) {
	r := io.MultiReader(strings.NewReader(`{"round_trips":[],"x":"`), &endless{})
	_, err := parseIrttEvents("big.json", untrusted.Reader(r, "big.json", 1<<20), MaxEvents)
	var tl *untrusted.TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "big.json") {
		t.Fatalf("%v, want a TooLargeError naming big.json", err)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}
