// Package pathrec records a real path through a tlab agent and fits a
// link profile to it, so that the emulator can replay a seeded, repeatable
// copy of the user's own network.
//
// What it measures, with UDP probes to the agent's reflector (see
// docs/methodology.md): the round trip; each direction's one-way delay
// variation (the agent stamps each probe on arrival, so the clocks' offset
// cancels in the variation); each direction's loss and its burstiness
// (which probes the agent saw, which echoes came back); and each
// direction's bottleneck rate over time, from the dispersion of short
// packet trains. What it cannot capture: the split of the base round trip
// between the directions (each gets half), the available rate under other
// traffic (a train's dispersion measures the bottleneck's capacity), queue
// depths and their AQM, reordering, and anything shorter than a probe's
// spacing.
package pathrec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"tlab/internal/emu"
	"tlab/internal/remote"

	"tlab/internal/results"
)

// Options say how to probe.
type Options struct {
	Duration time.Duration
	// Rate is probes per second (100 when zero), ProbeSize their size.
	Rate      int
	ProbeSize int
	// Every TrainEvery a train of TrainLen packets of TrainSize goes each
	// way.
	TrainEvery time.Duration
	TrainLen   int
	TrainSize  int
	// Port is the agent's prober port (7448 when zero).
	Port int
	// Load, after the recording at rest, loads each direction in turn
	// for LoadFor (3 s when zero) at LoadFactor (1.5 when zero) times
	// the rate the trains measured, at most LoadRateBps (50 Mbit/s when
	// zero; the agent's --max-load bounds the way back too), probing
	// all the while: the buffer, its discipline and ECN only show under
	// load.
	Load        bool
	LoadFor     time.Duration
	LoadFactor  float64
	LoadRateBps float64
}

// LoadSize is a load packet's UDP payload: with its 42 bytes of headers,
// a 1242-byte frame as the trains'.
const LoadSize = 1200

func (o *Options) defaults() {
	if o.Rate == 0 {
		o.Rate = 100
	}
	if o.ProbeSize == 0 {
		o.ProbeSize = 200
	}
	if o.TrainEvery == 0 {
		o.TrainEvery = time.Second
	}
	if o.TrainLen == 0 {
		o.TrainLen = 16
	}
	if o.TrainSize == 0 {
		o.TrainSize = 1200
	}
	if o.Port == 0 {
		o.Port = remote.DefaultPort + 1
	}
	if o.LoadFor == 0 {
		o.LoadFor = 3 * time.Second
	}
	if o.LoadFactor == 0 {
		o.LoadFactor = 1.5
	}
	if o.LoadRateBps == 0 {
		o.LoadRateBps = 50e6
	}
}

// LoadPlan is how long a loaded recording takes beyond its time at rest,
// and the most it sends each way: what tlab record says before it starts.
func (o Options) LoadPlan() (extra time.Duration, maxBps float64) {
	o.defaults()
	if !o.Load {
		return 0, 0
	}
	return 2 * (o.LoadFor + loadSettle), o.LoadRateBps
}

// loadSettle is the quiet after each direction's load, for its queue to
// drain before the next phase.
const loadSettle = time.Second

// Phases of a recording: at rest (with trains), loading up, loading down,
// and the settling after each load (left out of every fit).
const (
	PhaseRest byte = iota
	PhaseUpLoad
	PhaseDownLoad
	PhaseSettle
)

// LoadRun is one direction's load: the rate offered, when it ran (since
// the recording started), what was sent and what the far end counted.
type LoadRun struct {
	OfferedBps float64
	From, To   time.Duration
	Sent       int
	Got        remote.LoadReport
	// Refused says why the load did not run (the agent's limit, no rate
	// measured), when it did not.
	Refused string
}

// Probe is one regular probe: when it left (this clock), when the agent
// saw it (its clock, 0 if not echoed), when the echo came back (0: lost),
// and whether the agent saw it at all.
type Probe struct {
	Seq                     uint32
	SentNs, AgentNs, BackNs int64
	// AgentSentNs is when the agent sent the echo back (its clock; 0
	// from an agent that does not say).
	AgentSentNs int64
	AgentSaw    bool
	// NearTrain marks a probe sent soon after a train: it may wait behind
	// the train's packets, so its delay is not the path's.
	NearTrain bool
	// Phase is the recording's phase when it was sent (PhaseRest ...).
	Phase byte
}

// trainShadow is how long after a train a probe's delay is not counted.
const trainShadow = 150 * time.Millisecond

// Train is one train's rate estimate at a time.
type Train struct {
	At      time.Duration // since the recording started
	RateBps float64
}

// Recording is what probing a path found.
type Recording struct {
	Agent    string
	Start    time.Time
	Duration time.Duration
	Probes   []Probe
	Up, Down []Train
	Options  Options
	// UpLoad and DownLoad are the loaded phase's loads (Options.Load).
	UpLoad, DownLoad LoadRun
}

// frameOverhead is what a UDP datagram adds on the wire in whole Ethernet
// frames, as the emulator's rate counts them: Ethernet 14, IPv4 20, UDP 8.
const frameOverhead = 42

// trainBase numbers the up trains' probes apart from the regular ones,
// above those the reflector tracks.
const trainBase = remote.TrackedProbes

// Record probes the path to the agent for o.Duration.
func Record(ctx context.Context, c *remote.Client, o Options) (*Recording, error) {
	o.defaults()
	if o.Duration < time.Second {
		return nil, errors.New("a recording needs at least a second")
	}
	extra, _ := o.LoadPlan()
	n := int((o.Duration + extra).Seconds() * float64(o.Rate))
	if n >= trainBase {
		return nil, fmt.Errorf("%d probes: at most %d (shorten --duration or lower the rate)", n, trainBase-1)
	}
	var sr remote.ProbeResult
	secs := int((o.Duration + extra).Seconds()) + 30
	if err := c.Call(remote.OpProbe, remote.ProbeArgs{Port: o.Port, Seconds: min(secs, remote.MaxProbeSeconds)}, &sr); err != nil {
		return nil, err
	}
	udp, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: c.Host(), Port: o.Port})
	if err != nil {
		return nil, err
	}
	defer udp.Close()
	// Echoes and trains are timed by the kernel on arrival: a reader
	// that got to them late would see a train bunched.
	conn, err := remote.Stamp(udp)
	if err != nil {
		return nil, err
	}
	rec := &Recording{Agent: c.Addr, Start: time.Now(), Options: o, Probes: make([]Probe, n)}
	var mu sync.Mutex
	upTrain := map[uint32]int64{}          // train probe seq → agent's receive time
	downTrain := map[int64][]int64{}       // train id → arrival times here
	trainSent := map[int]time.Duration{}   // up train index → when
	downAsked := map[int64]time.Duration{} // down train id → when
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 2048)
		for {
			k, _, now, ecn, err := conn.ReadStampedECN(buf)
			if err != nil {
				return
			}
			p, err := remote.ParseProbe(buf[:k])
			if err != nil {
				continue
			}
			mu.Lock()
			switch {
			case p.Kind == 'E' && p.Seq < uint32(n):
				pr := &rec.Probes[p.Seq]
				if pr.BackNs == 0 {
					pr.AgentNs, pr.AgentSentNs, pr.BackNs = p.AgentNs, p.AgentSentNs, now
				}
			case p.Kind == 'E' && p.Seq >= trainBase:
				upTrain[p.Seq] = p.AgentNs
			case p.Kind == 'D':
				downTrain[p.TimeNs] = append(downTrain[p.TimeNs], now)
			case p.Kind == 'F':
				rec.DownLoad.Got.Add(k, now, ecn)
			}
			mu.Unlock()
		}
	}()
	gap := time.Second / time.Duration(o.Rate)
	nextTrain := time.Duration(0)
	trains := 0
	start := time.Now()
	// The loaded phase's schedule, after the time at rest.
	upFrom := o.Duration
	upTo := upFrom + o.LoadFor
	downFrom := upTo + loadSettle
	downTo := downFrom + o.LoadFor
	loadDone := make(chan struct{})
	close(loadDone) // replaced by the up load's while it runs
	phaseAt := func(t time.Duration) byte {
		switch {
		case !o.Load || t < upFrom:
			return PhaseRest
		case t < upTo:
			return PhaseUpLoad
		case t >= downFrom && t < downTo:
			return PhaseDownLoad
		}
		return PhaseSettle
	}
	upStarted, downStarted := false, false
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if d := time.Until(start.Add(time.Duration(i) * gap)); d > 0 {
			time.Sleep(d)
		}
		since := time.Since(start)
		phase := phaseAt(since)
		if phase == PhaseUpLoad && !upStarted {
			upStarted = true
			mu.Lock()
			rate := o.loadRate(upTrains(upTrain, trainSent, trains, o.TrainLen, bitsOf(o.TrainSize)))
			mu.Unlock()
			rec.UpLoad = LoadRun{OfferedBps: rate, From: since, To: since + o.LoadFor}
			if rate <= 0 {
				rec.UpLoad.Refused = "no rate measured to load at"
			} else {
				loadDone = make(chan struct{})
				go func(done chan struct{}) {
					defer close(done)
					rec.UpLoad.Sent = sendLoad(ctx, conn, sr.Cookie, rate, o.LoadFor)
				}(loadDone)
			}
		}
		if phase == PhaseDownLoad && !downStarted {
			downStarted = true
			<-loadDone
			mu.Lock()
			rate := o.loadRate(downTrains(downTrain, downAsked, bitsOf(o.TrainSize)))
			mu.Unlock()
			rec.DownLoad.OfferedBps, rec.DownLoad.From, rec.DownLoad.To = rate, since, since+o.LoadFor
			if rate <= 0 {
				rec.DownLoad.Refused = "no rate measured to load at"
			} else if err := c.Call(remote.OpProbeFill, remote.FillArgs{ID: sr.ID, RateBps: rate, Millis: int(o.LoadFor.Milliseconds()), Size: LoadSize}, nil); err != nil {
				rec.DownLoad.Refused = err.Error()
			}
		}
		sent := time.Now().UnixNano()
		mu.Lock()
		rec.Probes[i].Seq, rec.Probes[i].SentNs, rec.Probes[i].Phase = uint32(i), sent, phase
		rec.Probes[i].NearTrain = trains > 0 && since-trainSent[trains-1] < trainShadow
		mu.Unlock()
		conn.Write(remote.ProbePacket{Kind: 'E', Cookie: sr.Cookie, Seq: uint32(i), TimeNs: sent}.Marshal(o.ProbeSize))
		if phase == PhaseRest && since < o.Duration && since >= nextTrain {
			nextTrain += o.TrainEvery
			mu.Lock()
			trainSent[trains] = since
			downAsked[int64(trains+1)] = since
			mu.Unlock()
			for j := 0; j < o.TrainLen; j++ {
				seq := uint32(trainBase + trains*remote.MaxTrain + j)
				conn.Write(remote.ProbePacket{Kind: 'E', Cookie: sr.Cookie, Seq: seq, TimeNs: time.Now().UnixNano()}.Marshal(o.TrainSize))
			}
			conn.Write(remote.ProbePacket{Kind: 'T', Cookie: sr.Cookie, Seq: uint32(o.TrainLen), TimeNs: int64(o.TrainSize)}.Marshal(o.ProbeSize))
			trains++
		}
	}
	rec.Duration = min(time.Since(start), o.Duration)
	<-loadDone
	// Echoes still on their way.
	time.Sleep(time.Second)
	var rep remote.ProbeReport
	err = c.Call(remote.OpProbeReport, remote.StopArgs{ID: sr.ID}, &rep)
	conn.Close()
	<-readDone
	if err != nil {
		return nil, err
	}
	for i := range rec.Probes {
		s := rec.Probes[i].Seq
		rec.Probes[i].AgentSaw = int(s/8) < len(rep.Received) && rep.Received[s/8]&(1<<(s%8)) != 0
	}
	rec.UpLoad.Got = rep.Load
	rec.DownLoad.Sent = rep.Filled
	bits := bitsOf(o.TrainSize)
	rec.Up = upTrains(upTrain, trainSent, trains, o.TrainLen, bits)
	rec.Down = downTrains(downTrain, downAsked, bits)
	return rec, nil
}

// upTrains are the rates of the first n up trains (of trainLen packets
// each, timed by the agent on arrival), each at the time it was sent.
func upTrains(upTrain map[uint32]int64, trainSent map[int]time.Duration, n, trainLen int, bits float64) []Train {
	var out []Train
	for t := 0; t < n; t++ {
		var at []int64
		for j := 0; j < trainLen; j++ {
			if v, ok := upTrain[uint32(trainBase+t*remote.MaxTrain+j)]; ok {
				at = append(at, v)
			}
		}
		if r := trainRate(at, bits); r > 0 {
			out = append(out, Train{At: trainSent[t], RateBps: r})
		}
	}
	return out
}

// downTrains are the down trains' rates (their packets' arrival times
// here, by train id), in the order asked for, each at the time it was.
func downTrains(downTrain map[int64][]int64, downAsked map[int64]time.Duration, bits float64) []Train {
	ids := slices.Sorted(maps.Keys(downTrain))
	var out []Train
	for _, id := range ids {
		if r := trainRate(downTrain[id], bits); r > 0 {
			out = append(out, Train{At: downAsked[id], RateBps: r})
		}
	}
	return out
}

// bitsOf is a datagram's size on the wire, in bits, as the emulator's
// rate counts it.
func bitsOf(size int) float64 { return float64((size + frameOverhead) * 8) }

// loadRate is a direction's load: LoadFactor times the median rate of its
// trains, at most LoadRateBps (0 without a train).
func (o Options) loadRate(trains []Train) float64 {
	if len(trains) == 0 {
		return 0
	}
	rates := make([]float64, len(trains))
	for i, t := range trains {
		rates[i] = t.RateBps
	}
	return min(median(rates)*o.LoadFactor, o.LoadRateBps)
}

// sendLoad sends load packets (ECT(0)) to the prober at rateBps for d,
// paced, and returns how many it sent.
func sendLoad(ctx context.Context, conn *remote.StampedConn, cookie uint64, rateBps float64, d time.Duration) int {
	gap := time.Duration(bitsOf(LoadSize) / rateBps * 1e9)
	start := time.Now()
	sent := 0
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * gap)
		if at.Sub(start) >= d || ctx.Err() != nil {
			return sent
		}
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		if conn.WriteECN(remote.ProbePacket{Kind: 'L', Cookie: cookie, Seq: uint32(i), TimeNs: time.Now().UnixNano()}.Marshal(LoadSize), nil, 2) == nil {
			sent++
		}
	}
}

// trainRate is a train's rate from its packets' arrival times: bits per
// packet times the spacings over the span from the first arrival to the
// last. At least four packets must arrive.
func trainRate(at []int64, bits float64) float64 {
	if len(at) < 4 {
		return 0
	}
	slices.Sort(at)
	span := float64(at[len(at)-1] - at[0])
	if span <= 0 {
		return 0
	}
	return bits * float64(len(at)-1) / (span / 1e9)
}

// Direction is what a recording says of one direction.
type Direction struct {
	// DelayMs is half the median round trip, less what the emulator adds
	// on replay (the probe's serialisation, a trace's wait, a stall);
	// JitterMs the standard deviation of what of the direction's one-way
	// delay variation the replayed rate does not explain, JitterDist its
	// shape, and Coherence its correlation in time (0: none).
	DelayMs, JitterMs float64
	JitterDist        string
	Coherence         time.Duration
	// Stalls are the stretches in which the direction held its packets.
	Stalls []Stall
	// Load is what the loaded phase showed (Options.Load).
	Load LoadFit
	// LossPct and MeanBurst (consecutive probes lost) of the direction,
	// outside its outages.
	LossPct, MeanBurst float64
	// Outages are the stretches in which the direction lost every probe
	// for at least OutageMinProbes in a row (probes go out at a fixed
	// rate, so a run of losses is a time): replayed in time (loss model
	// outages), not as a burst of packets, which a backed-off sender
	// would stretch over seconds. MeanOutage is their mean length,
	// MeanBetween the mean time from one's end to the next's start.
	Outages                 int
	MeanOutage, MeanBetween time.Duration
	// RateBps is the median train rate; Rates the trains over time.
	RateBps float64
	Rates   []Train
}

// Fit is the link a recording describes.
type Fit struct {
	RTTMinMs, RTTMedianMs float64
	Probes                int
	Up, Down              Direction
}

// Fit fits a link to the recording.
func (r *Recording) Fit() (Fit, error) {
	var rtts []float64
	var up, down []probeTiming
	var upLost, downLost []bool
	var t0, agent0 int64
	var upLoaded, downLoaded []loadedProbe
	for _, p := range r.Probes {
		switch {
		case p.Phase == PhaseUpLoad && p.AgentSaw:
			upLoaded = append(upLoaded, loadedProbe{p.AgentNs, float64(p.AgentNs-p.SentNs) / 1e6})
		case p.Phase == PhaseDownLoad && p.BackNs != 0:
			downLoaded = append(downLoaded, loadedProbe{p.BackNs, float64(p.BackNs-max(p.AgentNs, p.AgentSentNs)) / 1e6})
		}
		if p.Phase != PhaseRest {
			continue
		}
		upLost = append(upLost, !p.AgentSaw)
		if !p.AgentSaw {
			continue
		}
		downLost = append(downLost, p.BackNs == 0)
		if p.BackNs == 0 || p.NearTrain {
			continue
		}
		// The way back starts when the agent sent the echo, not when the
		// probe reached it: the agent's hold is neither direction's, nor
		// the path's round trip. (An agent that does not say sends 0.)
		left := max(p.AgentNs, p.AgentSentNs)
		u, d := float64(p.AgentNs-p.SentNs)/1e6, float64(p.BackNs-left)/1e6
		if len(rtts) == 0 {
			t0, agent0 = r.Probes[0].SentNs, left-(p.SentNs-r.Probes[0].SentNs)
		}
		rtts = append(rtts, u+d)
		// Entry times on the recording's clock: the agent's, moved by
		// its offset as the first echo saw it (its one-way delay is in
		// the offset: the down entries come about half a round trip
		// early, well within a train's spacing).
		up = append(up, probeTiming{at: p.SentNs - t0, owd: u})
		down = append(down, probeTiming{at: left - agent0, owd: d})
	}
	if len(rtts) < 10 {
		return Fit{}, fmt.Errorf("only %d of %d probes came back: the path (or the prober's port %d) is closed", len(rtts), len(r.Probes), r.Options.Port)
	}
	f := Fit{Probes: len(r.Probes), RTTMinMs: slices.Min(rtts), RTTMedianMs: median(rtts)}
	o := r.Options
	o.defaults()
	spacing := time.Second / time.Duration(o.Rate)
	total := r.Duration
	if total <= 0 {
		total = time.Duration(len(r.Probes)) * spacing
	}
	f.Up = direction(upLost, r.Up, spacing)
	f.Down = direction(downLost, r.Down, spacing)
	size := o.ProbeSize + frameOverhead
	// What the replayed rate explains, then the stalls it does not, then
	// what is left is jitter: each effect fitted once.
	base := slices.Clone(rtts)
	for _, x := range []struct {
		d      *Direction
		p      []probeTiming
		trains []Train
	}{{&f.Up, up, r.Up}, {&f.Down, down, r.Down}} {
		at, owd := make([]int64, len(x.p)), make([]float64, len(x.p))
		for i, p := range x.p {
			at[i], owd[i] = p.at, p.owd
		}
		waits, err := replayWaits(*x.d, total, at, size, x.trains, o.TrainLen, o.TrainSize+frameOverhead)
		if err != nil {
			return Fit{}, err
		}
		if x.d.Stalls = stallsIn(x.p, waits, spacing); len(x.d.Stalls) > 0 {
			if waits, err = replayWaits(*x.d, total, at, size, x.trains, o.TrainLen, o.TrainSize+frameOverhead); err != nil {
				return Fit{}, err
			}
		}
		// A probe a stall held is the stall's: its wait is hundreds of
		// milliseconds, and the millisecond by which the replay's hold
		// ends apart from the path's would weigh in jitter's variance as
		// if it were a spread.
		free := unheld(at, x.d.Stalls)
		x.d.JitterMs, x.d.JitterDist, x.d.Coherence = jitterShape(pick(owd, free), pick(waits, free), spacing)
		for i := range base {
			base[i] -= waits[i]
		}
	}
	for _, x := range []struct {
		d      *Direction
		run    LoadRun
		loaded []loadedProbe
		rest   []probeTiming
	}{{&f.Up, r.UpLoad, upLoaded, up}, {&f.Down, r.DownLoad, downLoaded, down}} {
		var rest []float64
		for _, p := range x.rest {
			rest = append(rest, p.owd)
		}
		if r.Options.Load {
			x.d.Load = loadFit(x.run, x.loaded, median(rest))
		}
	}
	// Each direction gets half the median round trip the replay's rate
	// leaves (the split needs one clock at both ends: it is not known),
	// lifted by how far a lognormal jitter's median lies below the base.
	for _, d := range []*Direction{&f.Up, &f.Down} {
		d.DelayMs = median(base) / 2
		if d.JitterDist == emu.DistLogNormal {
			d.DelayMs += lognormalMedianShift * d.JitterMs
		}
		d.DelayMs = math.Max(d.DelayMs, 0)
	}
	return f, nil
}

// direction fits one direction's loss and rates; its delay and jitter
// come from Fit, once the replayed rate's share is known.
func direction(lost []bool, trains []Train, spacing time.Duration) Direction {
	d := Direction{Rates: despike(trains)}
	var rest []bool
	d.Outages, d.MeanOutage, d.MeanBetween, rest = outagesIn(lost, spacing)
	d.LossPct, d.MeanBurst = lossRuns(rest)
	var rates []float64
	for _, t := range trains {
		rates = append(rates, t.RateBps)
	}
	if len(rates) > 0 {
		// A train whose packets bunched (held behind a delayed one)
		// reads faster than the link; the median is robust to a few.
		d.RateBps = median(rates)
	}
	return d
}

// despike gives each train the median rate of itself and its two
// neighbours (of the first or last three at the ends). A train that
// disagrees with both neighbours says more of a stall than of the path:
// a host or hop that holds a train and then releases it at once makes it
// read hundreds of times faster than the link, and a trace replays each
// train's rate until the next train (one such train once made a trace of
// a 20 Mbit/s link average 161 Mbit/s). A change that lasts two trains or
// more is kept; a shorter one is below what the trains resolve anyway.
func despike(trains []Train) []Train {
	if len(trains) < 3 {
		return trains
	}
	out := slices.Clone(trains)
	for i := range trains {
		lo := min(max(i-1, 0), len(trains)-3)
		three := []float64{trains[lo].RateBps, trains[lo+1].RateBps, trains[lo+2].RateBps}
		out[i].RateBps = median(three)
	}
	return out
}

// OutageMin is the shortest run of lost probes taken as an outage, in
// time: 100 ms of nothing (ten probes in a row at 100 probes/s), and at
// least OutageMinProbes. Shorter runs stay bursts of the Gilbert model: a
// path whose loss comes in bursts of three packets (Gilbert-Elliott, mean
// burst 3) loses ten probes in a row in one burst in about 40 (2/3 to the
// 9th), where the outages tlab is after (a handover, a radio's fade, a
// link's flap) last a hundred milliseconds or more.
const OutageMin = 100 * time.Millisecond

// OutageMinProbes is the fewest probes an outage's run may hold, at any
// probe rate.
const OutageMinProbes = 3

// outagesIn finds the outages in a direction's probe losses (runs of lost
// probes lasting at least OutageMin and holding at least OutageMinProbes,
// each lasting its probes' count times the spacing), and returns their count, mean length, mean time between
// them (the recording's time up, over the outages), and the losses
// outside them, whose rate the model keeps between outages.
func outagesIn(lost []bool, spacing time.Duration) (n int, meanOutage, meanBetween time.Duration, rest []bool) {
	var down int
	for i := 0; i < len(lost); {
		j := i
		for j < len(lost) && lost[j] {
			j++
		}
		if j-i >= OutageMinProbes && time.Duration(j-i)*spacing >= OutageMin {
			n++
			down += j - i
		} else {
			rest = append(rest, lost[i:j]...)
		}
		if j < len(lost) {
			rest = append(rest, false)
		}
		i = j + 1
	}
	if n == 0 {
		return 0, 0, 0, lost
	}
	meanOutage = time.Duration(down) * spacing / time.Duration(n)
	meanBetween = time.Duration(len(lost)-down) * spacing / time.Duration(n)
	return n, meanOutage, meanBetween, rest
}

// lossRuns is the share of true values in percent, and the mean length
// of their runs.
func lossRuns(lost []bool) (pct, meanBurst float64) {
	n, runs, inRun := 0, 0, false
	for _, l := range lost {
		if l {
			n++
			if !inRun {
				runs++
			}
		}
		inRun = l
	}
	if len(lost) == 0 || n == 0 {
		return 0, 0
	}
	return 100 * float64(n) / float64(len(lost)), float64(n) / float64(runs)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// mean is the values' arithmetic mean.
func mean(v []float64) float64 {
	var m float64
	for _, x := range v {
		m += x
	}
	return m / float64(len(v))
}

func stddev(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := mean(v)
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(v)-1))
}

// variable tells whether a direction's rate varied enough over the
// recording to replay it as a trace rather than a constant (a coefficient
// of variation over 25 %: a train's own estimate varies by some 20 % on a
// link with jitter).
func variable(trains []Train) bool {
	var r []float64
	for _, t := range trains {
		r = append(r, t.RateBps)
	}
	if len(r) < 3 {
		return false
	}
	return stddev(r)/mean(r) > 0.25
}

// Trace writes a direction's rates over time as a mahimahi trace: each
// train's rate holds until the next, as 1500-byte delivery opportunities
// in whole milliseconds, none within a stall.
func Trace(trains []Train, stalls []Stall, total time.Duration) []byte {
	var b strings.Builder
	b.WriteString("# tlab record: delivery opportunities of 1500 bytes, ms\n")
	for i, t := range trains {
		end := total
		if i+1 < len(trains) {
			end = trains[i+1].At
		}
		perMs := t.RateBps / (1500 * 8) / 1000 // opportunities per ms
		acc := 0.0
		from := t.At
		if i == 0 {
			from = 0 // the first train's rate holds from the start
		}
		for ms := from.Milliseconds(); ms < end.Milliseconds(); ms++ {
			if inStall(stalls, time.Duration(ms)*time.Millisecond) {
				continue
			}
			acc += perMs
			for acc >= 1 {
				b.WriteString(strconv.FormatInt(ms+1, 10))
				b.WriteByte('\n')
				acc--
			}
		}
	}
	return []byte(b.String())
}

// inStall tells whether t falls within a stall.
func inStall(stalls []Stall, t time.Duration) bool {
	for _, s := range stalls {
		if t >= s.From && t < s.To {
			return true
		}
	}
	return false
}

// Profile writes the fit as a link profile (YAML) named name; a direction
// whose rate varied refers to a trace file in traceDir, returned by path,
// to be written there.
func (f Fit) Profile(name, agent string, r *Recording, traceDir string) ([]byte, map[string][]byte) {
	traces := map[string][]byte{}
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", name)
	fmt.Fprintf(&b, "description: \"The path to the tlab agent at %s, recorded by tlab record on %s over %v.\"\n", agent, r.Start.UTC().Format(time.RFC3339), r.Duration.Round(time.Second))
	fmt.Fprintf(&b, "source: \"tlab record: %d probes at %d/s and %d+%d packet trains; round trip min %.2f ms, median %.2f ms. Each direction gets half the median round trip less what the replayed rate adds to a probe (the split needs one clock at both ends); rate from train dispersion (the bottleneck's capacity, not what other traffic left), as a trace when it varied or the direction stalled (held its packets and let them go at once: a stretch of the trace without delivery opportunities); jitter is what of the one-way delay variation the replayed rate and stalls do not explain (the variances' difference), lognormal when clearly right-skewed, correlated in time from consecutive probes, probes right after a train left out; loss is what the probes met: probes lost in a row for 100 ms or more as outages that last a time (loss model outages), shorter bursts as the simple Gilbert model.%s docs/methodology.md says what a recording cannot capture.\"\n",
		f.Probes, r.Options.Rate, len(r.Up), len(r.Down), f.RTTMinMs, f.RTTMedianMs, f.loadSource())
	for _, d := range []struct {
		key string
		dir Direction
	}{{"up", f.Up}, {"down", f.Down}} {
		fmt.Fprintf(&b, "%s:\n  delay: %.3fms\n", d.key, d.dir.DelayMs)
		if d.dir.JitterMs >= 0.001 { // what %.3f writes as nonzero
			fmt.Fprintf(&b, "  jitter: %.3fms\n  jitter_dist: %s\n", d.dir.JitterMs, d.dir.JitterDist)
			if d.dir.Coherence > 0 {
				fmt.Fprintf(&b, "  jitter_coherence: %v\n", d.dir.Coherence)
			}
		}
		switch {
		case d.dir.replaysTrace():
			file := filepath.Join(traceDir, name+"-"+d.key+".trace")
			traces[file] = Trace(d.dir.replayRates(), d.dir.Stalls, r.Duration)
			// The path's slow stretches and stalls came at no particular
			// time of a cell: each repetition meets them at another.
			fmt.Fprintf(&b, "  trace: %s\n  trace_phase: %s\n", file, emu.TracePhaseRandom)
		case d.dir.RateBps > 0:
			fmt.Fprintf(&b, "  rate: %.0fkbit\n", d.dir.RateBps/1000)
		}
		b.WriteString(d.dir.Load.queueYAML())
		switch {
		case d.dir.Outages > 0:
			// Outages last a time; what was lost between them is a
			// rate (its bursts, two probes at most, are not kept).
			fmt.Fprintf(&b, "  loss:\n    model: outages\n    mean_outage: %v\n    mean_between: %v\n", d.dir.MeanOutage.Round(time.Millisecond), d.dir.MeanBetween.Round(time.Millisecond))
			if d.dir.LossPct > 0 {
				fmt.Fprintf(&b, "    rate: %.3f%%\n", d.dir.LossPct)
			}
		case d.dir.LossPct == 0:
		case d.dir.MeanBurst > 1.05:
			fmt.Fprintf(&b, "  loss:\n    model: gilbert-elliott\n    rate: %.3f%%\n    mean_burst: %.2f\n", d.dir.LossPct, d.dir.MeanBurst)
		default:
			fmt.Fprintf(&b, "  loss: %.3f%%\n", d.dir.LossPct)
		}
	}
	return []byte(b.String()), traces
}

// loadSource is the profile's account of the loaded phase ("" without
// one).
func (f Fit) loadSource() string {
	if !f.Up.Load.Ran && f.Up.Load.Note == "" && !f.Down.Load.Ran && f.Down.Load.Note == "" {
		return " Not recorded under load (tlab record --load=false): the queues are the emulator's defaults."
	}
	return " Under load, one direction at a time: " + f.Up.Load.describe("up") + ". " + f.Down.Load.describe("down") + "."
}

// RecordTo records the path to the agent at addr and writes the fitted
// profile to out (and its traces beside it, by absolute path). The
// profile's name is out's base name without its extension.
func RecordTo(ctx context.Context, addr string, dial remote.DialOptions, o Options, out string) (Fit, []string, error) {
	c, err := remote.Dial(ctx, addr, dial)
	if err != nil {
		return Fit{}, nil, err
	}
	defer c.Close()
	rec, err := Record(ctx, c, o)
	if err != nil {
		return Fit{}, nil, err
	}
	fit, err := rec.Fit()
	if err != nil {
		return fit, nil, err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return fit, nil, err
	}
	name := strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
	profile, traces := fit.Profile(name, addr, rec, filepath.Dir(abs))
	written := []string{abs}
	for path, data := range traces {
		if err := results.WriteFileAtomic(path, data); err != nil {
			return fit, nil, err
		}
		written = append(written, path)
	}
	// Written as results are: a link at the profile's name is replaced,
	// not written through (tlab record runs as root).
	if err := results.WriteFileAtomic(abs, profile); err != nil {
		return fit, nil, err
	}
	return fit, written, nil
}
