package proto

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// ServerName is the name every tlab server answers to: its certificate's
// DNS name, and the name tlab's DNS service resolves to the server.
const ServerName = "tlab-server"

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

// Fetcher is a protocol that can make one request on a connection of its
// own and close it, timing each phase (study B's pattern). Fetch may be
// called concurrently; every call opens its own connection and keeps no
// session state between calls (no TLS resumption), as separate curl
// invocations do. On error the phases say how far the request got.
type Fetcher interface {
	Fetch(ctx context.Context, n Net, t Target, s Settings, reqSize, respSize int) (Phases, error)
}

// resolve runs a target's name lookup and records it.
func (t Target) resolve(ctx context.Context, start time.Time, ph *Phases) (net.IP, error) {
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

// fetchHTTP makes one POST over TCP (HTTP/1.1 in clear or over TLS, or
// HTTP/2 over TLS) on a transport of its own.
func fetchHTTP(ctx context.Context, n Net, t Target, s Settings, useTLS, h2 bool, reqSize, respSize int) (Phases, error) {
	start := time.Now()
	var ph Phases
	ip, err := t.resolve(ctx, start, &ph)
	if err != nil {
		return ph, err
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(t.Port))
	p := httpProto{tls: useTLS, h2: h2}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return n.DialContext(ctx, &net.Dialer{Control: s.control}, "tcp4", addr)
		},
		Protocols:          p.protocols(),
		DisableCompression: true,
		ForceAttemptHTTP2:  h2,
	}
	defer tr.CloseIdleConnections()
	scheme := "http"
	if useTLS {
		scheme = "https"
		c := s.clientTLS(p.alpn())
		c.ClientSessionCache = nil // a new invocation resumes nothing
		tr.TLSClientConfig = c
	}
	mark := func(d *time.Duration, phase string) { *d, ph.Reached = time.Since(start), phase }
	trace := &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				mark(&ph.Connect, "connect")
			}
		},
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err == nil {
				mark(&ph.AppConnect, "appconnect")
			}
		},
		GotConn:              func(httptrace.GotConnInfo) { mark(&ph.PreTransfer, "pretransfer") },
		GotFirstResponseByte: func() { mark(&ph.StartTransfer, "starttransfer") },
	}
	url := scheme + "://" + net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) + "/upload"
	n2, err := post(httptrace.WithClientTrace(ctx, trace), &http.Client{Transport: tr}, url, reqSize, respSize)
	ph.RespBytes = n2
	if err != nil {
		return ph, err
	}
	mark(&ph.Total, "total")
	return ph, nil
}

// fetchH3 makes one POST over HTTP/3 on a QUIC connection of its own.
// libcurl reports a QUIC connection's connect when its UDP socket is ready
// (no round trip) and its appconnect when the handshake is done.
func fetchH3(ctx context.Context, n Net, t Target, s Settings, reqSize, respSize int) (Phases, error) {
	start := time.Now()
	var ph Phases
	ip, err := t.resolve(ctx, start, &ph)
	if err != nil {
		return ph, err
	}
	c := quicTLS(s.clientTLS(http3.NextProtoH3))
	c.ClientSessionCache = nil
	qc, qlogs := quicConfig(s)
	defer qlogs.Wait()
	udp, err := n.ListenUDP(&net.UDPAddr{})
	if err != nil {
		return ph, err
	}
	defer udp.Close()
	ph.Connect, ph.Reached = time.Since(start), "connect"
	conn, err := quic.Dial(ctx, udp, &net.UDPAddr{IP: ip, Port: t.Port}, c, qc)
	if err != nil {
		return ph, err
	}
	ph.AppConnect, ph.Reached = time.Since(start), "appconnect"
	tr := &http3.Transport{TLSClientConfig: c, QUICConfig: qc,
		Dial: func(context.Context, string, *tls.Config, *quic.Config) (*quic.Conn, error) { return conn, nil }}
	defer tr.Close()
	url := "https://" + net.JoinHostPort(t.Host, strconv.Itoa(t.Port)) + "/upload"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(make([]byte, reqSize)))
	if err != nil {
		return ph, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(responseSizeHeader, strconv.Itoa(respSize))
	ph.PreTransfer, ph.Reached = time.Since(start), "pretransfer"
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return ph, err
	}
	defer resp.Body.Close()
	// http3 calls no first-byte hook: the headers are in when RoundTrip
	// returns, and the response starts with them.
	ph.StartTransfer, ph.Reached = time.Since(start), "starttransfer"
	nb, err := io.Copy(io.Discard, resp.Body)
	ph.RespBytes = int(nb)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %s", resp.Status)
	}
	if err != nil {
		return ph, err
	}
	ph.Total, ph.Reached = time.Since(start), "total"
	conn.CloseWithError(0, "")
	return ph, nil
}

// Fetch implements Fetcher for h2.
func (p httpProto) Fetch(ctx context.Context, n Net, t Target, s Settings, reqSize, respSize int) (Phases, error) {
	return fetchHTTP(ctx, n, t, s, p.tls, p.h2, reqSize, respSize)
}

// Fetch implements Fetcher for h1 and h1s.
func (p h1Proto) Fetch(ctx context.Context, n Net, t Target, s Settings, reqSize, respSize int) (Phases, error) {
	return fetchHTTP(ctx, n, t, s, p.tls, false, reqSize, respSize)
}

// Fetch implements Fetcher for h3.
func (h3Proto) Fetch(ctx context.Context, n Net, t Target, s Settings, reqSize, respSize int) (Phases, error) {
	return fetchH3(ctx, n, t, s, reqSize, respSize)
}
