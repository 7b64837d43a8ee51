// Package dns is the name service of study B's testbed: a small server that
// answers A queries for tlab's server name in the server's host, and the
// stub resolver a fresh connection's lookup uses, so that the lookup crosses
// the emulated link as curl's did.
package dns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Port is where ServeDNS listens.
const Port = 53

// Attempts and Timeout are the resolver's retries and the wait for
// each answer: glibc's "options timeout:1 attempts:3", which tlab also
// writes into the resolv.conf it gives external clients (curl), so that a
// lost query costs both the same.
const (
	Attempts = 3
	Timeout  = time.Second
)

// UDPHost opens UDP sockets inside one host (proto.Net and
// *testbed.Host do).
type UDPHost interface {
	ListenUDP(addr *net.UDPAddr) (*net.UDPConn, error)
}

// dnsServer answers A queries for a fixed set of names.
type dnsServer struct {
	conn  *net.UDPConn
	names map[string]net.IP
	wg    sync.WaitGroup
}

// Serve answers A queries for names (case-insensitive, with or without
// the final dot) on UDP port 53 of host n: the name service a fresh
// connection's lookup crosses the emulated link to reach, as study B's
// curl did. Other names get NXDOMAIN; other types an empty answer.
func Serve(n UDPHost, names map[string]net.IP) (io.Closer, error) {
	conn, err := n.ListenUDP(&net.UDPAddr{Port: Port})
	if err != nil {
		return nil, fmt.Errorf("dns: %w", err)
	}
	s := &dnsServer{conn: conn, names: map[string]net.IP{}}
	for k, v := range names {
		s.names[strings.ToLower(strings.TrimSuffix(k, "."))+"."] = v
	}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

func (s *dnsServer) serve() {
	defer s.wg.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if reply, err := s.answer(buf[:n]); err == nil {
			s.conn.WriteToUDP(reply, from)
		}
	}
}

func (s *dnsServer) answer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	ip, known := s.names[strings.ToLower(q.Name.String())]
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if known && q.Type == dnsmessage.TypeA && ip.To4() != nil {
		var a [4]byte
		copy(a[:], ip.To4())
		if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: a}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

func (s *dnsServer) Close() error {
	err := s.conn.Close()
	s.wg.Wait()
	return err
}

// LookupA asks the name server at server (port 53) from host n for name's
// IPv4 address, as a stub resolver does: one query over UDP, retried after
// Timeout, Attempts times in all.
func LookupA(ctx context.Context, n UDPHost, server net.IP, name string) (net.IP, error) {
	qname, err := dnsmessage.NewName(strings.TrimSuffix(name, ".") + ".")
	if err != nil {
		return nil, err
	}
	conn, err := n.ListenUDP(&net.UDPAddr{})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	id := uint16(rand.Uint32())
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: qname, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	query, err := b.Finish()
	if err != nil {
		return nil, err
	}
	dst := &net.UDPAddr{IP: server, Port: Port}
	buf := make([]byte, 1500)
	for attempt := 0; attempt < Attempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := conn.WriteToUDP(query, dst); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(Timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		conn.SetReadDeadline(deadline)
		for {
			m, _, err := conn.ReadFromUDP(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break // next attempt
				}
				return nil, err
			}
			ip, done, err := parseA(buf[:m], id)
			if done {
				return ip, err
			}
		}
	}
	return nil, fmt.Errorf("no answer from %v after %d attempts", server, Attempts)
}

// parseA reads an answer to query id; done is false for a datagram that
// is not that answer.
func parseA(msg []byte, id uint16) (ip net.IP, done bool, err error) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || h.ID != id || !h.Response {
		return nil, false, nil
	}
	if h.RCode != dnsmessage.RCodeSuccess {
		return nil, true, fmt.Errorf("name server: %v", h.RCode)
	}
	if err := p.SkipAllQuestions(); err != nil {
		return nil, true, err
	}
	for {
		rh, err := p.AnswerHeader()
		if err != nil {
			return nil, true, errors.New("no A record in the answer")
		}
		if rh.Type == dnsmessage.TypeA {
			a, err := p.AResource()
			if err != nil {
				return nil, true, err
			}
			return net.IP(a.A[:]), true, nil
		}
		if err := p.SkipAnswer(); err != nil {
			return nil, true, err
		}
	}
}
