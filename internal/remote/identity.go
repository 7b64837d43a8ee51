// Package remote lets tlab measure across a real network: `tlab agent` on
// the far machine runs tlab's own servers for the controller that paired
// with it, over a control channel authenticated both ways (mutual TLS with
// pinned self-signed identities, paired once with a one-time token, as
// SSH's known hosts remember a host). The control channel carries small
// length-prefixed JSON messages whose decoder is strict and bounded.
package remote

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Identity is a long-lived self-signed key pair that names an agent or a
// controller. Peers know each other by its fingerprint, not by a CA.
type Identity struct {
	Cert        tls.Certificate
	Fingerprint string
}

// Fingerprint is the SHA-256 of a certificate's DER, in hex.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// NewIdentity makes a fresh identity named name (not stored).
func NewIdentity(name string) (Identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Identity{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return Identity{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(20, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Identity{}, fmt.Errorf("identity certificate: %w", err)
	}
	return Identity{Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, Fingerprint: Fingerprint(der)}, nil
}

// LoadOrCreateIdentity reads the identity stored at path, or makes one and
// stores it there (mode 0600, in a directory of mode 0700). The directory
// and the file must be this user's and closed to others (checkPrivate).
func LoadOrCreateIdentity(path, name string) (Identity, error) {
	if err := privateDir(filepath.Dir(path)); err != nil {
		return Identity{}, err
	}
	data, err := readPrivate(path)
	if err == nil {
		cert, err := tls.X509KeyPair(data, data)
		if err != nil {
			return Identity{}, fmt.Errorf("identity %s: %w", path, err)
		}
		return Identity{Cert: cert, Fingerprint: Fingerprint(cert.Certificate[0])}, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return Identity{}, err
	}
	id, err := NewIdentity(name)
	if err != nil {
		return Identity{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(id.Cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		return Identity{}, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.Cert.Certificate[0]})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	if err := WritePrivateFile(path, out); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// StateDir is where tlab keeps identities, paired controllers and known
// agents: $TLAB_STATE_DIR, or the user's configuration directory
// (~/.config/tlab). There is no fallback to a shared directory such as
// /tmp: another user could have made it first and filled it.
func StateDir() (string, error) {
	if d := os.Getenv("TLAB_STATE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no directory for tlab's identities: %v; set TLAB_STATE_DIR (or give tlab agent --state DIR)", err)
	}
	return filepath.Join(d, "tlab"), nil
}

// privateDir makes dir (mode 0700) if it is missing and checks it as
// sshd's StrictModes checks a user's files: dir and every directory above
// it belong to this user or root, dir is writable by no one else, and a
// directory above it is writable by others only with the sticky bit (as
// /tmp). Otherwise someone else could plant an identity or a paired
// controller there, or read this one's key.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d, first := abs, true; ; d, first = filepath.Dir(d), false {
		st, err := os.Stat(d)
		if err != nil {
			return err
		}
		if err := ownedHere(d, st); err != nil {
			return err
		}
		mode := st.Mode()
		switch {
		case first && mode.Perm()&0o022 != 0:
			return fmt.Errorf("refusing the state directory %s: mode %04o lets others write in it (chmod 700 %s)", dir, mode.Perm(), dir)
		case !first && mode.Perm()&0o022 != 0 && mode&os.ModeSticky == 0:
			return fmt.Errorf("refusing the state directory %s: %s above it (mode %04o) lets others replace it", dir, d, mode.Perm())
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
}

// ownedHere refuses what belongs neither to this user nor to root.
func ownedHere(path string, st os.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if me := os.Geteuid(); int(sys.Uid) != me && sys.Uid != 0 {
		return fmt.Errorf("refusing %s: it belongs to uid %d, not to you (uid %d) or root: another user could have planted it", path, sys.Uid, me)
	}
	return nil
}

// readPrivate reads a state file that must be this user's (or root's), a
// regular file and closed to others (mode 0600 or stricter); it refuses a
// link rather than follow it.
func readPrivate(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("refusing %s: it is a symbolic link", path)
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("refusing %s: not a regular file", path)
	}
	if err := ownedHere(path, st); err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("refusing %s: mode %04o lets others read or change it (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	return io.ReadAll(io.LimitReader(f, maxStateFile))
}

// maxStateFile bounds what a state file may hold (a key, a list of peers).
const maxStateFile = 1 << 20

// WritePrivateFile writes data to path with mode 0600 as a new file: it is
// written beside path under a fresh name and renamed over it, so a link at
// path is replaced, never followed, and a file there with a looser mode
// does not keep it.
func WritePrivateFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	return nil
}
