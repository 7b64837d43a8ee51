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
	"math/big"
	"os"
	"path/filepath"
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
// stores it there (mode 0600, in a directory of mode 0700).
func LoadOrCreateIdentity(path, name string) (Identity, error) {
	data, err := os.ReadFile(path)
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
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Identity{}, err
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// StateDir is where tlab keeps identities, paired controllers and known
// agents: $TLAB_STATE_DIR, or ~/.config/tlab.
func StateDir() string {
	if d := os.Getenv("TLAB_STATE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserConfigDir(); err == nil {
		return filepath.Join(d, "tlab")
	}
	return filepath.Join(os.TempDir(), "tlab-state")
}
