package workload

import (
	"context"
	"testing"
	"time"

	"tlab/internal/results"
)

func TestBulkRunsStreamsTogether(t *testing.T) {
	c := &slowClient{service: 30 * time.Millisecond, multiplexes: true}
	var recs []results.Record
	err := Bulk{Streams: 4, Bytes: 1000}.Drive(context.Background(), c, func(r results.Record) { recs = append(recs, r) })
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || c.maxInflight.Load() != 4 {
		t.Fatalf("%d records, %d streams at once; want 4 and 4", len(recs), c.maxInflight.Load())
	}
	seen := map[int]bool{}
	for _, r := range recs {
		if !r.OK() || r.RespBytes != 1000 || r.DelayMs < 29 || seen[r.Seq] {
			t.Fatalf("record %+v", r)
		}
		seen[r.Seq] = true
	}
}

func TestBulkRefusesParallelStreamsWithoutMultiplexing(t *testing.T) {
	c := &slowClient{service: time.Millisecond}
	if err := (Bulk{Streams: 2, Bytes: 10}).Drive(context.Background(), c, func(results.Record) {}); err == nil {
		t.Fatal("two streams over a protocol that cannot multiplex were accepted")
	}
	if err := (Bulk{Streams: 1, Bytes: 10}).Drive(context.Background(), c, func(results.Record) {}); err != nil {
		t.Fatalf("one stream: %v", err)
	}
}

func TestBulkReportsShortStreams(t *testing.T) {
	c := &slowClient{service: time.Millisecond, multiplexes: true, short: 1}
	var recs []results.Record
	err := Bulk{Streams: 2, Bytes: 100}.Drive(context.Background(), c, func(r results.Record) { recs = append(recs, r) })
	if err == nil || len(recs) != 2 || recs[0].OK() {
		t.Fatalf("a short stream went unnoticed: err %v, records %+v", err, recs)
	}
}
