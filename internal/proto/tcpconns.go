package proto

import (
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// tcpiOptECN is TCP_INFO's "ECN was negotiated" option bit (linux/tcp.h:
// TCPI_OPT_ECN).
const tcpiOptECN = 8

// TCPConns records what every TCP connection a client opened actually
// runs, read from its socket once connected: the congestion control
// (TCP_CONGESTION) and whether the handshake negotiated ECN (TCP_INFO).
// A row's tcp_congestion and tcp_ecn come from here, not from the
// settings asked for: a kernel without the module, or a peer that
// refuses ECN, shows.
type TCPConns struct {
	mu         sync.Mutex
	congestion map[string]int
	ecn        map[bool]int
}

// Observe reads c's socket; a connection that is not TCP (or whose
// socket cannot be read) is not counted.
func (t *TCPConns) Observe(c net.Conn) {
	if t == nil {
		return
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	var cc string
	var info *unix.TCPInfo
	var cerr, ierr error
	if err := raw.Control(func(fd uintptr) {
		cc, cerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || cerr != nil || ierr != nil {
		return
	}
	t.note(strings.TrimRight(cc, "\x00"), info.Options&tcpiOptECN != 0)
}

func (t *TCPConns) note(congestion string, ecn bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.congestion == nil {
		t.congestion, t.ecn = map[string]int{}, map[bool]int{}
	}
	t.congestion[congestion]++
	t.ecn[ecn]++
}

// Negotiated is the congestion controls the connections ran (several
// joined by "+", "" when none was observed) and whether they negotiated
// ECN: true or false when all agree, "true+false" when they differ, ""
// when none was observed.
func (t *TCPConns) Negotiated() (congestion string, ecn any) {
	if t == nil {
		return "", ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.congestion))
	for n := range t.congestion {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, "+"), Agreement(t.ecn)
}

// Agreement is a label for a yes-or-no several connections answered,
// counted by answer: true or false when they all agree, "true+false" when
// they differ, "" when none answered.
func Agreement(answers map[bool]int) any {
	switch len(answers) {
	case 0:
		return ""
	case 2:
		return "true+false"
	}
	return answers[true] > 0
}
