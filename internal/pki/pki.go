// Package pki makes the throw-away certificates of one run: a CA and the
// server certificate every tlab server presents.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// ServerName is the name every tlab server answers to: its certificate's
// DNS name, and the name tlab's DNS service resolves to the server.
const ServerName = "tlab-server"

// Certificates is a throw-away PKI made for one run: a CA and a server
// certificate it signed, valid for the given addresses. Nothing is written
// to disk and nothing is reused between runs.
type Certificates struct {
	Server tls.Certificate
	Roots  *x509.CertPool
	// CA is the run's CA certificate, for external clients (curl's
	// --cacert) that must trust the servers.
	CA *x509.Certificate
}

// NewCertificates makes an ECDSA P-256 CA and a server certificate for ips
// and the name ServerName.
func NewCertificates(ips ...net.IP) (*Certificates, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "tlab run CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(48 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: ServerName},
		DNSNames:     []string{ServerName},
		IPAddresses:  ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(48 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return &Certificates{Server: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, Roots: roots, CA: ca}, nil
}
