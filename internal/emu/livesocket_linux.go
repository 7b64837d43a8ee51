package emu

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// LiveRequest is what `tlab link set` sends over a run's control socket:
// the link (empty when the run has one) and the changes, as
// ParseLiveChanges reads them.
type LiveRequest struct {
	Link    string `json:"link,omitempty"`
	Changes string `json:"changes"`
}

// LiveResponse is the socket's answer: the changes made, as link events
// (their time on the link's clock), or why none was.
type LiveResponse struct {
	Events []LinkEvent `json:"events,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// maxLiveRequest bounds one request: a line of changes is a few dozen
// bytes.
const maxLiveRequest = 4096

// ServeLive listens on a Unix socket at path for live changes to the
// links named (`tlab link set`), until stop. The socket is the caller's
// user's alone (mode 0600, in the run registry, which only that user can
// write), and each connection's peer must be that user or root
// (SO_PEERCRED): permission on the file is the authentication, as for
// the run registry. One request a connection, answered, then closed.
func (p *Process) ServeLive(path string, links []string) (stop func() error, err error) {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("live control socket: %w", err)
	}
	l.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("live control socket: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return // closed
			}
			p.serveLiveConn(c, links)
		}
	}()
	return func() error {
		err := l.Close()
		<-done
		return err
	}, nil
}

// PeerUID is the uid of the process at the other end of a Unix socket.
func PeerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return cred.Uid, nil
}

func (p *Process) serveLiveConn(c *net.UnixConn, links []string) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	reply := func(r LiveResponse) { json.NewEncoder(c).Encode(r) }
	uid, err := PeerUID(c)
	if err != nil || (uid != 0 && uid != uint32(os.Geteuid())) {
		reply(LiveResponse{Error: "only this run's user or root may change its links"})
		return
	}
	line, err := bufio.NewReader(io.LimitReader(c, maxLiveRequest)).ReadBytes('\n')
	if err != nil {
		reply(LiveResponse{Error: "a request is one JSON line"})
		return
	}
	var req LiveRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		reply(LiveResponse{Error: "request: " + err.Error()})
		return
	}
	events, err := p.applyLive(req, links)
	if err != nil {
		reply(LiveResponse{Events: events, Error: err.Error()})
		return
	}
	reply(LiveResponse{Events: events})
}

// applyLive makes a request's changes, up then down.
func (p *Process) applyLive(req LiveRequest, links []string) ([]LinkEvent, error) {
	link := req.Link
	if link == "" {
		if len(links) != 1 {
			return nil, fmt.Errorf("the run has %d links: name one (--link) of %v", len(links), links)
		}
		link = links[0]
	}
	up, down, err := ParseLiveChanges(req.Changes)
	if err != nil {
		return nil, err
	}
	var events []LinkEvent
	for _, c := range []struct {
		dir  string
		step *TimelineStep
	}{{"up", up}, {"down", down}} {
		if c.step == nil {
			continue
		}
		if _, err := p.Set(link, c.dir, *c.step); err != nil {
			return events, err
		}
		ev := p.LiveEvents()
		events = append(events, ev[len(ev)-1])
	}
	return events, nil
}

// SendLive sends a request to the control socket at path and returns the
// answer. The server must run as this user or root: a socket someone
// else bound is not told anything.
func SendLive(path string, req LiveRequest) (LiveResponse, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return LiveResponse{}, fmt.Errorf("the run's control socket %s answers no more: has the run ended?", path)
		}
		return LiveResponse{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	uid, err := PeerUID(c)
	if err != nil {
		return LiveResponse{}, err
	}
	if uid != 0 && uid != uint32(os.Geteuid()) {
		return LiveResponse{}, fmt.Errorf("%s is served by uid %d, neither this user nor root", path, uid)
	}
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return LiveResponse{}, err
	}
	var r LiveResponse
	dec := json.NewDecoder(io.LimitReader(c, 1<<20))
	if err := dec.Decode(&r); err != nil {
		return LiveResponse{}, fmt.Errorf("control socket's answer: %w", err)
	}
	return r, nil
}
