package proto

import (
	"context"
	"fmt"
	"net"
	"time"

	"tlab/internal/pki"
)

// ServerName is the name every tlab server answers to: its certificate's
// DNS name, and the name tlab's DNS service resolves to the server.
const ServerName = pki.ServerName

// Phases are the times of one request made on a connection of its own, as
// one curl invocation makes it, each from the request's start and defined
// as curl's -w variables are: name resolved (namelookup), transport
// connected (connect: the TCP handshake; for QUIC the UDP socket, ready at
// once, as libcurl reports it), TLS or QUIC handshake done (appconnect; 0
// without TLS, as in curl), about
// to send (pretransfer), first response byte (starttransfer), all done
// (total). A phase not reached is 0; Reached names the last one reached.
type Phases struct {
	NameLookup, Connect, AppConnect, PreTransfer, StartTransfer, Total time.Duration
	Reached                                                            string
	RespBytes                                                          int
}

// Target is where a one-shot request goes: a name (or an address) and a
// port, and how to resolve the name (nil: Host is an address).
type Target struct {
	Host    string
	Port    int
	Resolve func(ctx context.Context, host string) (net.IP, error)
}

// Fetcher is the fetch capability (CapFetch, with an Exchanger's server):
// a protocol that can make one request on a connection of its
// own and close it, timing each phase (study B's pattern). Fetch may be
// called concurrently; every call opens its own connection and keeps no
// session state between calls (no TLS resumption), as separate curl
// invocations do. On error the phases say how far the request got.
type Fetcher interface {
	Fetch(ctx context.Context, n Net, t Target, s Settings, reqSize, respSize int) (Phases, error)
}

// Lookup runs a target's name lookup and records it.
func (t Target) Lookup(ctx context.Context, start time.Time, ph *Phases) (net.IP, error) {
	if t.Resolve == nil {
		ip := net.ParseIP(t.Host)
		if ip == nil {
			return nil, fmt.Errorf("%q is not an address and no resolver was given", t.Host)
		}
		ph.NameLookup, ph.Reached = time.Since(start), "namelookup"
		return ip, nil
	}
	ip, err := t.Resolve(ctx, t.Host)
	if err != nil {
		return nil, fmt.Errorf("name lookup of %s: %w", t.Host, err)
	}
	ph.NameLookup, ph.Reached = time.Since(start), "namelookup"
	return ip, nil
}
