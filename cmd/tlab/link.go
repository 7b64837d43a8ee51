package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"tlab/internal/emu"
	"tlab/internal/testbed"
)

// runLink is `tlab link set`: a change to a running link, through the
// run's control socket.
func runLink(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("link", "link set [--run ID] [--link NAME] CHANGES\n\nChange a link of a live run or tlab shell now: CHANGES are fields of a timeline step,\ndotted with up or down for one direction (both without), and ramp to move to them over\na time: up.loss=5%, delay=40ms,ramp=2s, down.rate=5Mbit, up.queue_packets=20. Each change\nis logged with its time like a timeline's step (the cell's link-events.csv). Only the run's\nuser or root may change it.", stderr)
	run := fs.String("run", "", "the live run's ID (as tlab cleanup --dry-run and the run registry name it); the only live run when absent")
	link := fs.String("link", "", "the link's name; the run's only link when absent")
	pos, code, ok := parseArgs(fs, args, 2)
	if !ok {
		return code
	}
	if len(pos) != 2 || pos[0] != "set" {
		fmt.Fprintln(stderr, "tlab link: want: tlab link set [--run ID] [--link NAME] CHANGES (for example up.loss=5%)")
		return exitUsage
	}
	if _, _, err := emu.ParseLiveChanges(pos[1]); err != nil {
		fmt.Fprintf(stderr, "tlab link set: %v\n", err)
		return exitUsage
	}
	sock, err := testbed.LiveSocket(*run)
	if err != nil {
		return errorExit(stderr, err)
	}
	answer, err := emu.SendLive(sock, emu.LiveRequest{Link: *link, Changes: pos[1]})
	if err != nil {
		return errorExit(stderr, err)
	}
	for _, e := range answer.Events {
		st := e.State
		ramp := ""
		if e.Ramp > 0 {
			ramp = fmt.Sprintf(" over %v", e.Ramp)
		}
		fmt.Fprintf(stdout, "%s %s at %v of the link's clock%s: delay %v, jitter %v, loss %.4g%%, rate %s, queue %d packets %d bytes\n",
			e.Link, e.Direction, e.At.Round(time.Microsecond), ramp, st.Delay, st.Jitter, st.Loss*100, rateOrUnlimited(st.RateBps), st.QueuePackets, st.QueueBytes)
	}
	if answer.Error != "" {
		return errorExit(stderr, errors.New(answer.Error))
	}
	return exitOK
}

func rateOrUnlimited(bps float64) string {
	if bps == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%.6g Mbit/s", bps/1e6)
}
