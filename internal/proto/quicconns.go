package proto

import (
	"sync"

	"github.com/quic-go/quic-go"
)

// QUICConns is the set of QUIC connections a server accepted and still
// serves. Closing a quic-go listener leaves its accepted connections be,
// and closing the socket does not end them either (a single-use
// listener's transport ignores its socket's close once the listener is
// closed): a connection whose client's CONNECTION_CLOSE was lost (a full
// queue, a cancelled transfer) lives on until its next write fails, the
// 10 s keep-alive, and holds a server's Close that waits for its
// goroutines that long. A server Adds each connection it accepts and
// CloseAll ends them all when it closes. The zero value is ready.
type QUICConns struct {
	mu     sync.Mutex
	conns  map[*quic.Conn]struct{}
	closed bool
}

// Add records an accepted connection. Once CloseAll has begun it closes c
// instead and returns false: the server serves it no further.
func (q *QUICConns) Add(c *quic.Conn) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		c.CloseWithError(0, "server closed")
		return false
	}
	if q.conns == nil {
		q.conns = map[*quic.Conn]struct{}{}
	}
	q.conns[c] = struct{}{}
	return true
}

// Remove forgets a connection the server is done with (or handed on).
func (q *QUICConns) Remove(c *quic.Conn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.conns, c)
}

// CloseAll ends every recorded connection, and any Added after it.
func (q *QUICConns) CloseAll() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for c := range q.conns {
		c.CloseWithError(0, "server closed")
	}
	q.conns = nil
}
