// Package workload drives protocol clients with the traffic patterns of
// real applications and turns what they observe into records, one per
// request.
package workload

import (
	"context"
	"time"

	"tlab/internal/proto"
)

// Record is one request as the application saw it. Times are milliseconds
// since the workload started; a record is one row of tidy data.
type Record struct {
	Seq         int     `json:"seq"`
	Warmup      bool    `json:"warmup"`
	ScheduledMs float64 `json:"scheduled_ms"`
	SentMs      float64 `json:"sent_ms"`
	// LatenessMs is how late the request was sent against its schedule:
	// the time it waited for a protocol that cannot multiplex.
	LatenessMs float64 `json:"lateness_ms"`
	DoneMs     float64 `json:"done_ms"`
	// DelayMs is the response delay: from sending the request to having
	// the whole response.
	DelayMs     float64 `json:"delay_ms"`
	FirstByteMs float64 `json:"first_byte_ms"`
	ReqBytes    int     `json:"req_bytes"`
	RespBytes   int     `json:"resp_bytes"`
	ConnID      int     `json:"conn_id"`
	NewConn     bool    `json:"new_conn"`
	// ConnectMs and HandshakeMs are the transport (TCP) and TLS or QUIC
	// handshakes of a new connection.
	ConnectMs   float64 `json:"connect_ms"`
	HandshakeMs float64 `json:"handshake_ms"`
	Resumed     bool    `json:"resumed"`
	EarlyData   bool    `json:"early_data"`
	Error       string  `json:"error,omitempty"`
}

// OK tells whether the request completed.
func (r Record) OK() bool { return r.Error == "" }

// Workload produces records from a protocol client.
type Workload interface {
	Run(ctx context.Context, c proto.Client, emit func(Record)) error
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
