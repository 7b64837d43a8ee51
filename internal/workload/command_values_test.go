package workload

import (
	"net"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"tlab/internal/results"
)

// TestTemplateValuesByHand: the values a command stack's placeholders
// hold, each worked by hand from the guide's definitions (docs/guide.md,
// "command stacks"): {duration_s} is the whole run, warm-up included;
// {warmup_s} the warm-up; {workload.NAME_ms} and {workload.NAME_s} a
// duration parameter in milliseconds and seconds; {workload.NAME_bytes} a
// size in bytes (KiB = 1024 B); {count} the scenario's count when it
// gives one, else the workload's planned records; $TLAB_SERVER the
// server's address alone and $TLAB_SERVER_ADDR with its port.
func TestTemplateValuesByHand(t *testing.T) {
	server, client := net.ParseIP("10.0.0.2"), net.ParseIP("10.0.0.1")
	// A run by duration: 2 s warm-up + 10 s measured = 12 s in all.
	c := Command{
		Base:   Periodic{Interval: 25 * time.Millisecond, Duration: 10 * time.Second, Warmup: 2 * time.Second},
		Params: map[string]string{"interval": "25ms", "timeout": "1.5s", "payload": "1.5KiB", "name": "a  b"},
		Seed:   42,
		Common: Common{Duration: 10 * time.Second, Warmup: 2 * time.Second},
	}
	v := c.values(server, client, 4433, "/d/commands/events.jsonl", "/d/commands")
	want := map[string]string{
		"listen": ":4433", "server": "10.0.0.2:4433", "server_ip": "10.0.0.2", "client_ip": "10.0.0.1", "port": "4433",
		"seed": "42",
		// Periodic's planned records: 2 s / 25 ms = 80 warm-up + 10 s / 25 ms = 400 measured.
		"count":      "480",
		"duration_s": "12", "warmup_s": "2",
		"events": "/d/commands/events.jsonl", "dir": "/d/commands",
		"workload.interval": "25ms", "workload.interval_ms": "25", "workload.interval_s": "0.025",
		"workload.timeout": "1.5s", "workload.timeout_ms": "1500", "workload.timeout_s": "1.5",
		// 1.5 × 1024 = 1536 bytes; a duration is no size and a size no duration.
		"workload.payload": "1.5KiB", "workload.payload_bytes": "1536",
		"workload.name": "a  b",
	}
	for name, w := range want {
		if v[name] != w {
			t.Errorf("{%s} = %q, want %q", name, v[name], w)
		}
	}
	for name := range v {
		if _, ok := want[name]; !ok {
			t.Errorf("{%s} = %q: not a placeholder of this workload", name, v[name])
		}
	}

	// A run by count: the scenario's count, and the workload's plan for
	// the duration (7 requests 10 ms apart, no warm-up: 70 ms).
	byCount := Command{Base: Periodic{Interval: 10 * time.Millisecond, Count: 7}, Common: Common{Count: 7}}
	v = byCount.values(server, client, 4433, "e", "d")
	if v["count"] != "7" || v["duration_s"] != "0.07" || v["warmup_s"] != "0" {
		t.Errorf("by count: count %q, duration_s %q, warmup_s %q; want 7, 0.07, 0", v["count"], v["duration_s"], v["warmup_s"])
	}
	// The scenario's count, not the workload's own plan (here 3).
	v = Command{Base: Periodic{Interval: 10 * time.Millisecond, Count: 3}, Common: Common{Count: 9}}.values(server, client, 1, "e", "d")
	if v["count"] != "9" {
		t.Errorf("count %q, want the scenario's 9", v["count"])
	}

	env := commandEnv(want)
	for _, kv := range []string{"TLAB_SERVER=10.0.0.2", "TLAB_CLIENT=10.0.0.1", "TLAB_SERVER_ADDR=10.0.0.2:4433", "TLAB_DURATION_S=12", "TLAB_WORKLOAD_TIMEOUT_MS=1500"} {
		if !slices.Contains(env, kv) {
			t.Errorf("the commands' environment lacks %s", kv)
		}
	}

	// A value with spaces is one word wherever the placeholder stands
	// bare: printf prints it once, both spaces kept.
	line, err := script(`printf '[%s]' {workload.name} {server}`, want)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Env = env
	out, err := cmd.Output()
	if got := string(out); err != nil || got != "[a  b][10.0.0.2:4433]" {
		t.Errorf("%s printed %q (%v), want [a  b][10.0.0.2:4433]", line, got, err)
	}
}

// TestCommandRunMarksTheWarmup: a command stack's events sent within the
// scenario's warm-up (counted from when the client command started) are
// warm-up records, those after are measured: the client reports one event
// at once and one after sleeping past the 1 s warm-up.
func TestCommandRunMarksTheWarmup(t *testing.T) {
	dir := t.TempDir()
	event := func(seq int) string {
		return `now=$(date +%s%N); echo "{\"seq\":` + strconv.Itoa(seq) + `,\"sent_ns\":$now,\"done_ns\":$((now+1000)),\"req_bytes\":10,\"resp_bytes\":10}" >> {events}; `
	}
	rec := &recorder{notes: map[string]float64{}}
	env := &Env{Hosts: processHosts{}, Dir: dir,
		Emit:        func(r results.Record) { rec.mu.Lock(); rec.records = append(rec.records, r); rec.mu.Unlock() },
		StartWindow: func() {},
		Note:        func(string, float64) {},
		Fail:        func(why string) { rec.mu.Lock(); rec.failed = append(rec.failed, why); rec.mu.Unlock() },
	}
	c := Command{Base: Periodic{Interval: time.Second, ReqSize: 10, RespSize: 10, Count: 1, Warmup: time.Second},
		Stack:  CommandStack{Name: "mine", Client: event(0) + `sleep 1.5; ` + event(1)},
		Common: Common{Count: 1, Warmup: time.Second}, Params: map[string]string{"interval": "1s"}}
	if err := c.Run(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	if len(rec.failed) > 0 || len(rec.records) != 2 {
		t.Fatalf("failed %q, %d records, want 2", rec.failed, len(rec.records))
	}
	slices.SortFunc(rec.records, func(a, b results.Record) int { return a.Seq - b.Seq })
	if !rec.records[0].Warmup || rec.records[1].Warmup {
		t.Errorf("warm-up marks %v, %v (sent at %.0f and %.0f ms): want the first only (warm-up 1000 ms)",
			rec.records[0].Warmup, rec.records[1].Warmup, rec.records[0].SentMs, rec.records[1].SentMs)
	}
	if s := rec.records[1].SentMs; !(s >= 1500) || rec.records[1].Error != "" {
		t.Errorf("second event sent at %.0f ms, error %q: want at least 1500 ms and none", s, rec.records[1].Error)
	}
}
