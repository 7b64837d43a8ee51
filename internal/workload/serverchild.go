package workload

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"

	"tlab/internal/pki"
	"tlab/internal/proto"
)

// ServerProcessRequest is a ServerRequest of a kind as it crosses to a
// server that runs in a child process (a CPU-limited host's server,
// testbed.Host.StartServerProcess): the protocol by name, the settings
// as JSON, the run's server certificate and key as PEM (its CA stays in
// tlab).
type ServerProcessRequest struct {
	Kind     string            `json:"kind"`
	Protocol string            `json:"protocol,omitempty"`
	Port     int               `json:"port"`
	Settings json.RawMessage   `json:"settings"`
	QlogDir  string            `json:"qlog_dir,omitempty"`
	CertPEM  string            `json:"cert_pem,omitempty"`
	KeyPEM   string            `json:"key_pem,omitempty"`
	Broker   string            `json:"broker,omitempty"`
	Names    map[string]net.IP `json:"names,omitempty"`
}

// NewServerProcessRequest is r, of kind, as a child process receives it.
func NewServerProcessRequest(kind string, r ServerRequest) (ServerProcessRequest, error) {
	pr := ServerProcessRequest{Kind: kind, Port: r.Port, QlogDir: r.Settings.QlogDir, Broker: r.Broker, Names: r.Names}
	if r.Protocol != nil {
		pr.Protocol = r.Protocol.Name
	}
	settings, err := json.Marshal(r.Settings)
	if err != nil {
		return pr, fmt.Errorf("settings: %w", err)
	}
	pr.Settings = settings
	if c := r.Settings.Certs; c != nil && len(c.Server.Certificate) > 0 {
		key, err := x509.MarshalPKCS8PrivateKey(c.Server.PrivateKey)
		if err != nil {
			return pr, fmt.Errorf("server key: %w", err)
		}
		pr.CertPEM = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Server.Certificate[0]}))
		pr.KeyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}))
	}
	return pr, nil
}

// ServeProcessRequest starts, in this process's network, the server a
// ServerProcessRequest (as JSON) asks for: what a host's server child
// runs (testbed.RunServerChildIfRequested).
func ServeProcessRequest(line []byte) (io.Closer, error) {
	var pr ServerProcessRequest
	if err := json.Unmarshal(line, &pr); err != nil {
		return nil, fmt.Errorf("server request: %w", err)
	}
	r := ServerRequest{Port: pr.Port, Broker: pr.Broker, Names: pr.Names, Settings: proto.DefaultSettings()}
	if pr.Protocol != "" {
		stack, err := proto.Lookup(pr.Protocol)
		if err != nil {
			return nil, err
		}
		r.Protocol = stack
	}
	if len(pr.Settings) > 0 {
		if err := json.Unmarshal(pr.Settings, &r.Settings); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
	}
	r.Settings.QlogDir = pr.QlogDir
	// What the server's library logs goes to the child's standard error,
	// which tlab hands to the run's server log.
	r.Settings.ServerLog = os.Stderr
	r.Settings.Certs = &pki.Certificates{}
	if pr.CertPEM != "" {
		cert, err := tls.X509KeyPair([]byte(pr.CertPEM), []byte(pr.KeyPEM))
		if err != nil {
			return nil, fmt.Errorf("server certificate: %w", err)
		}
		r.Settings.Certs.Server = cert
	}
	return StartServerIn(proto.LocalNet{}, pr.Kind, r)
}

// OutOfProcessRoles are the roles of w whose work runs in processes of
// their own host, where a host's CPU limit (topology cpu) holds it: the
// servers a workload asks for (its Serving path: a CPU-limited host runs
// them in a child process) and the programs a command workload starts.
// The other roles run in tlab's own process, which no host's limit
// reaches: the clients, publishers and subscribers of tlab's stacks and
// the frame servers.
func OutOfProcessRoles(w Workload) []string {
	switch w.(type) {
	case Periodic, Bulk, Upload:
		return []string{"server"}
	case PubSub:
		return []string{"broker"}
	case Command:
		return w.Info().Roles
	}
	return nil
}
