package proto

import (
	"crypto/tls"
	"slices"
	"strings"
	"sync"
)

// Handshakes records what each client TLS handshake of a cell negotiated
// (TLS over TCP, and the TLS inside QUIC), so that a row says what ran
// rather than what the settings asked for. Safe for concurrent use; the
// zero value is ready.
type Handshakes struct {
	mu       sync.Mutex
	versions map[string]int
	kexes    map[string]int
}

// observe notes one handshake's version and key exchange, as the
// client's VerifyConnection sees them. In TLS 1.3 the group is known by
// then; in a full TLS 1.2 handshake crypto/tls calls VerifyConnection at
// the server's Certificate, before its key exchange, so the group is
// still 0: the client offered exactly one (offered), and Go's client
// offers no RSA key exchange, so that is the one an ECDHE handshake
// uses. A TLS 1.2 resumption exchanges no key: its version alone counts.
func (h *Handshakes) observe(cs tls.ConnectionState, offered []tls.CurveID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.versions == nil {
		h.versions, h.kexes = map[string]int{}, map[string]int{}
	}
	h.versions[versionName(cs.Version)]++
	switch {
	case cs.CurveID != 0:
		h.kexes[keyExchangeName(cs.CurveID)]++
	case cs.Version == tls.VersionTLS12 && !cs.DidResume && len(offered) == 1:
		h.kexes[keyExchangeName(offered[0])]++
	}
}

// Negotiated is the version and key exchange the handshakes used, in the
// settings' own names ("1.3", "x25519"); several different ones are
// joined with "+", none is "".
func (h *Handshakes) Negotiated() (version, keyExchange string) {
	if h == nil {
		return "", ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	join := func(m map[string]int) string {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.Sort(names)
		return strings.Join(names, "+")
	}
	return join(h.versions), join(h.kexes)
}

// Count is how many handshakes completed.
func (h *Handshakes) Count() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.versions {
		n += c
	}
	return n
}

func versionName(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "1.3"
	case tls.VersionTLS12:
		return "1.2"
	}
	return strings.TrimPrefix(tls.VersionName(v), "TLS ")
}

func keyExchangeName(id tls.CurveID) string {
	for name, known := range keyExchanges {
		if known == id {
			return name
		}
	}
	return strings.ToLower(id.String())
}
