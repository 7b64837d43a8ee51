package reqresp

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
	"tlab/internal/proto"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// fetchHTTP makes one POST over TCP (HTTP/1.1 in clear or over TLS, or
// HTTP/2 over TLS) on a transport of its own.
func fetchHTTP(ctx context.Context, n proto.Net, t proto.Target, s proto.Settings, useTLS, h2 bool, reqSize, respSize int) (proto.Phases, error) {
	start := time.Now()
	var ph proto.Phases
	ip, err := t.Lookup(ctx, start, &ph)
	if err != nil {
		return ph, err
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(t.Port))
	p := httpProto{tls: useTLS, h2: h2}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := n.DialContext(ctx, &net.Dialer{Control: s.Control}, "tcp4", addr)
			if err == nil {
				s.TCP.Observe(conn)
			}
			return conn, err
		},
		Protocols:          p.protocols(),
		DisableCompression: true,
		ForceAttemptHTTP2:  h2,
	}
	defer tr.CloseIdleConnections()
	scheme := "http"
	if useTLS {
		scheme = "https"
		c := s.ClientTLS(p.alpn())
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
func fetchH3(ctx context.Context, n proto.Net, t proto.Target, s proto.Settings, reqSize, respSize int) (proto.Phases, error) {
	start := time.Now()
	var ph proto.Phases
	ip, err := t.Lookup(ctx, start, &ph)
	if err != nil {
		return ph, err
	}
	c := proto.QUICTLS(s.ClientTLS(http3.NextProtoH3))
	c.ClientSessionCache = nil
	qc, qlogs := proto.QUICConfig(s)
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
func (p httpProto) Fetch(ctx context.Context, n proto.Net, t proto.Target, s proto.Settings, reqSize, respSize int) (proto.Phases, error) {
	return fetchHTTP(ctx, n, t, s, p.tls, p.h2, reqSize, respSize)
}

// Fetch implements Fetcher for h1 and h1s.
func (p h1Proto) Fetch(ctx context.Context, n proto.Net, t proto.Target, s proto.Settings, reqSize, respSize int) (proto.Phases, error) {
	return fetchHTTP(ctx, n, t, s, p.tls, false, reqSize, respSize)
}

// Fetch implements Fetcher for h3.
func (h3Proto) Fetch(ctx context.Context, n proto.Net, t proto.Target, s proto.Settings, reqSize, respSize int) (proto.Phases, error) {
	return fetchH3(ctx, n, t, s, reqSize, respSize)
}
