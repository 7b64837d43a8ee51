package remote

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Pairing is what a controller needs to pair with an agent once: the
// agent's fingerprint (so that the first connection is already
// authenticated, with no trust on first use) and a one-time token (so that
// the agent knows the controller is the one its user meant).
type Pairing struct {
	Agent string // fingerprint
	Token string
}

const pairingHeader = "tlab pairing v1"

// maxPairingFile bounds what ParsePairing reads.
const maxPairingFile = 4096

// NewToken makes a one-time pairing token: 32 random bytes, base64url.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Marshal writes the pairing as the file `tlab agent --token-file` writes
// and `tlab run --token-file` reads.
func (p Pairing) Marshal() []byte {
	return fmt.Appendf(nil, "%s\nagent %s\ntoken %s\n", pairingHeader, p.Agent, p.Token)
}

// ParsePairing reads a pairing file; it says which line is wrong and why.
func ParsePairing(data []byte) (Pairing, error) {
	if len(data) > maxPairingFile {
		return Pairing{}, fmt.Errorf("pairing file of %d bytes: a pairing file is a few lines", len(data))
	}
	var p Pairing
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if line == 1 {
			if text != pairingHeader {
				return Pairing{}, fmt.Errorf("line 1: want %q (a file written by tlab agent --token-file)", pairingHeader)
			}
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, val, ok := strings.Cut(text, " ")
		switch {
		case !ok:
			return Pairing{}, fmt.Errorf("line %d: want 'agent FINGERPRINT' or 'token TOKEN'", line)
		case key == "agent":
			if !validFingerprint(val) {
				return Pairing{}, fmt.Errorf("line %d: agent fingerprint %q: want 64 hex digits", line, val)
			}
			p.Agent = val
		case key == "token":
			if b, err := base64.RawURLEncoding.DecodeString(val); err != nil || len(b) != 32 {
				return Pairing{}, fmt.Errorf("line %d: token: want 32 bytes in base64url", line)
			}
			p.Token = val
		default:
			return Pairing{}, fmt.Errorf("line %d: unknown key %q", line, key)
		}
	}
	if line == 0 {
		return Pairing{}, errors.New("empty pairing file")
	}
	if p.Agent == "" || p.Token == "" {
		return Pairing{}, errors.New("the pairing file lacks the agent's fingerprint or the token")
	}
	return p, nil
}

func validFingerprint(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32 && s == strings.ToLower(s)
}

// peerList is a file of fingerprints, one per line with a note after it:
// the controllers an agent accepts, the agents a controller knows (by
// address). It is read once and appended to.
type peerList struct {
	path string
	mu   sync.Mutex
	// entries maps a key (a fingerprint, or an address) to its value.
	entries map[string]string
}

func loadPeerList(path string) (*peerList, error) {
	l := &peerList{path: path, entries: map[string]string{}}
	if err := privateDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	data, err := readPrivate(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	for i, text := range strings.Split(string(data), "\n") {
		text = strings.TrimSpace(text)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, v, _ := strings.Cut(text, " ")
		if k == "" {
			return nil, fmt.Errorf("%s:%d: empty key", path, i+1)
		}
		l.entries[k] = strings.TrimSpace(v)
	}
	return l, nil
}

func (l *peerList) get(key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.entries[key]
	return v, ok
}

// put records key and value, in memory and in the file.
func (l *peerList) put(key, value string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries[key] = value
	keys := make([]string, 0, len(l.entries))
	for k := range l.entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", k, l.entries[k])
	}
	return WritePrivateFile(l.path, b.Bytes())
}
