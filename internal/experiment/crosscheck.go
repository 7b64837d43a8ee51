package experiment

import (
	"context"
	_ "embed"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"tlab/internal/cellrun"

	"tlab/internal/dns"
	"tlab/internal/emu"
	"tlab/internal/metrics"
	"tlab/internal/plan"
	"tlab/internal/proto"
	"tlab/internal/testbed"
	"tlab/internal/workload"
)

//go:embed clients/curl3.py
var curl3Script []byte

// PhaseNames are curl's timing variables, in order.
var PhaseNames = []string{"namelookup", "connect", "appconnect", "pretransfer", "starttransfer", "total"}

// CrossCheck compares tlab's timing of study B's requests with a real
// client's on the same emulated link: Debian's curl for h1 and h1s, and
// libcurl 8 (curl_cffi's build) for h2 and h3. Debian's curl 7.88 is not
// used for HTTP/2: it sets time_starttransfer when the server's first
// HTTP/2 frame (SETTINGS) arrives, right after the handshake, not at the
// response (curl issue 9765, fixed in libcurl 8). Requests alternate
// between the two clients, so that both meet the same host noise.
type CrossCheck struct {
	Protocols []string
	Link      emu.LinkConfig
	Count     int
	Size      int
	Settings  proto.Settings
	Seed      uint64
	// Progress, when set, hears which protocol is being checked.
	Progress func(protocol string)
}

// PhaseCheck is one phase of one protocol: both clients' medians, their
// difference and whether it is within the tolerance.
type PhaseCheck struct {
	Protocol    string  `json:"protocol"`
	Client      string  `json:"client"`
	Phase       string  `json:"phase"`
	TlabMs      float64 `json:"tlab_median_ms"`
	ExternalMs  float64 `json:"external_median_ms"`
	DiffMs      float64 `json:"diff_ms"`
	ToleranceMs float64 `json:"tolerance_ms"`
	Pass        bool    `json:"pass"`
	N           int     `json:"n"`
}

// Tolerance is how far tlab's median phase may be from the real client's:
// 1 ms plus 10 % of the real client's value. Both clients cross the same
// link, whose delays the emulator keeps to microseconds, so what differs is
// client work: key generation and handshake processing in Go's crypto/tls
// and quic-go against OpenSSL (curl) and BoringSSL with ngtcp2 (libcurl),
// and the clients' event loops, each well under a millisecond per phase on
// this 2-vCPU VM, plus implementation differences in how a handshake's
// flights are paced and coalesced, which scale with the phase (10 %).
func Tolerance(externalMs float64) float64 { return 1 + 0.1*externalMs }

// externalClient names the real client for a protocol.
func externalClient(protocol string) (string, error) {
	switch protocol {
	case "h1", "h1s":
		return "curl", nil
	case "h2", "h3":
		return "libcurl8", nil
	}
	return "", fmt.Errorf("no real client to check %s against (h1, h1s, h2, h3)", protocol)
}

// Run checks each protocol on a testbed of its own.
func (cc CrossCheck) Run(ctx context.Context) ([]PhaseCheck, error) {
	var out []PhaseCheck
	for _, p := range cc.Protocols {
		if cc.Progress != nil {
			cc.Progress(p)
		}
		checks, err := cc.one(ctx, p)
		if err != nil {
			return out, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, checks...)
	}
	return out, nil
}

// one checks a protocol: a cell through RunCell on a client-server
// testbed of the link, whose workload (crossCheckRequests) alternates
// tlab's requests with the real client's.
func (cc CrossCheck) one(ctx context.Context, protocol string) ([]PhaseCheck, error) {
	client, err := externalClient(protocol)
	if err != nil {
		return nil, err
	}
	if err := proto.Require(protocol, proto.CapFetch); err != nil {
		return nil, err
	}
	// The real clients' files (the CA, resolv.conf, the body): recorded
	// in the run registry, so that a kill leaves nothing tlab cleanup
	// does not know of.
	tmp, err := testbed.MakeTempDir("crosscheck")
	if err != nil {
		return nil, err
	}
	defer tmp.Remove()
	w := &crossCheckRequests{cc: cc, client: client}
	// A compiled cell of its own (no scenario): the link between a client
	// and a server, the protocol and the workload.
	spec := cellrun.SpecOf(plan.Cell{
		ID: "crosscheck-" + protocol, Profile: "crosscheck", Protocol: protocol, Seed: cc.Seed,
		Topology: testbed.ClientServer(cc.Link),
		Roles:    map[string]string{"client": "client", "server": "server"},
		Workload: w, Settings: cc.Settings,
	}, 1)
	spec.Label, spec.Dir = "tlab crosscheck", tmp.Path
	if _, err := cellrun.RunCell(ctx, spec, nil, nil); err != nil {
		return nil, err
	}
	return w.checks, nil
}

// crossCheckRequests is the crosscheck's workload: the protocol's server
// and study B's name server in the server's host, then Count requests
// of tlab's client alternating with the real client's in the client's
// host; it emits no records and keeps the phases' comparison.
type crossCheckRequests struct {
	cc     CrossCheck
	client string // the real client's name
	checks []PhaseCheck
}

func (w *crossCheckRequests) Info() workload.Info {
	return workload.Info{Type: "crosscheck", Roles: workload.ClientServerRoles, Needs: proto.CapFetch}
}

func (w *crossCheckRequests) Run(ctx context.Context, env *workload.Env) error {
	cc, protocol := w.cc, env.Protocol.Name
	f, _ := proto.As[proto.Fetcher](env.Protocol)
	clientHost, ok := env.Hosts.Net("client").(*testbed.Host)
	if !ok {
		return errors.New("the crosscheck runs the real client in a testbed's host: this site has none")
	}
	ip, err := env.Hosts.Addr("client", "server")
	if err != nil {
		return err
	}
	stop, err := workload.StartServer(env)
	if err != nil {
		return err
	}
	defer stop()
	names, err := dns.Serve(env.Hosts.Net("server"), map[string]net.IP{proto.ServerName: ip})
	if err != nil {
		return err
	}
	defer names.Close()
	settings := env.Settings
	// What the real clients read: the run's CA, and a resolv.conf naming
	// the server's name server with tlab's own resolver settings.
	caFile := filepath.Join(env.Dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: settings.Certs.CA.Raw}), 0o644); err != nil {
		return err
	}
	resolv := filepath.Join(env.Dir, "resolv.conf")
	conf := fmt.Sprintf("nameserver %s\noptions timeout:%d attempts:%d\n", ip, int(dns.Timeout.Seconds()), dns.Attempts)
	if err := os.WriteFile(resolv, []byte(conf), 0o644); err != nil {
		return err
	}
	ext, err := cc.externalCommand(protocol, env.Dir, caFile)
	if err != nil {
		return err
	}
	u := workload.Upload{Resolve: "dns"}
	target := u.Target(clientHost, ip)
	var tl, ex [][]float64
	for i := 0; i < cc.Count; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		ph, err := f.Fetch(rctx, clientHost, target, settings, cc.Size, 2)
		cancel()
		if err != nil {
			return fmt.Errorf("tlab request %d: %w", i, err)
		}
		tl = append(tl, phaseMs(ph))
		out, err := runExternal(clientHost, ext(), resolv)
		if err != nil {
			return fmt.Errorf("%s request %d: %w", w.client, i, err)
		}
		ex = append(ex, out)
	}
	for k, name := range PhaseNames {
		a, b := column(tl, k), column(ex, k)
		if protocol == "h1" && name == "appconnect" {
			continue // no TLS: curl reports 0, tlab nothing
		}
		c := PhaseCheck{Protocol: protocol, Client: w.client, Phase: name, TlabMs: metrics.QuantileOf(a, 0.5), ExternalMs: metrics.QuantileOf(b, 0.5), N: cc.Count}
		c.DiffMs = c.TlabMs - c.ExternalMs
		c.ToleranceMs = Tolerance(c.ExternalMs)
		c.Pass = math.Abs(c.DiffMs) <= c.ToleranceMs
		w.checks = append(w.checks, c)
	}
	return nil
}

// externalCommand returns a maker of the real client's command for one
// request.
func (cc CrossCheck) externalCommand(protocol, dir, caFile string) (func() *exec.Cmd, error) {
	url := "https://" + proto.ServerName + ":" + strconv.Itoa(workload.ServerPort) + "/upload"
	if protocol == "h3" || protocol == "h2" {
		script := filepath.Join(dir, "curl3.py")
		if err := os.WriteFile(script, curl3Script, 0o644); err != nil {
			return nil, err
		}
		self, _ := os.Executable()
		python, err := crossCheckPython(os.Getenv, self, func(p string) bool { return exec.Command(p, "-c", "import curl_cffi").Run() == nil })
		if err != nil {
			return nil, err
		}
		return func() *exec.Cmd {
			return exec.Command(python, script, url, caFile, strconv.Itoa(cc.Size), "2", protocol, cc.Settings.TLSVersion)
		}, nil
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		return nil, errors.New("curl is not installed (apt-get install curl; scripts/setup --tests does)")
	}
	body := filepath.Join(dir, "body")
	if err := os.WriteFile(body, make([]byte, cc.Size), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-4", "-s", "-S", "-o", "/dev/null", "--max-time", "30", "--data-binary", "@" + body,
		"-H", "Content-Type: application/octet-stream", "-H", "Tlab-Response-Size: 2",
		"-w", "%{time_namelookup} %{time_connect} %{time_appconnect} %{time_pretransfer} %{time_starttransfer} %{time_total}"}
	switch protocol {
	case "h1":
		url = "http://" + proto.ServerName + ":" + strconv.Itoa(workload.ServerPort) + "/upload"
		args = append(args, "--http1.1")
	case "h1s":
		args = append(args, "--http1.1", "--cacert", caFile)
	}
	if protocol != "h1" {
		if cc.Settings.TLSVersion == "1.2" {
			args = append(args, "--tlsv1.2", "--tls-max", "1.2")
		} else {
			args = append(args, "--tlsv1.3")
		}
	}
	return func() *exec.Cmd { return exec.Command(curl, append(args, url)...) }, nil
}

// runExternal runs one request of the real client in host h and parses its
// six times (seconds) into milliseconds.
func runExternal(h *testbed.Host, cmd *exec.Cmd, resolv string) ([]float64, error) {
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := h.Run(cmd, resolv); err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	f := strings.Fields(stdout.String())
	if len(f) != len(PhaseNames) {
		return nil, fmt.Errorf("want %d times, got %q (%s)", len(PhaseNames), stdout.String(), strings.TrimSpace(stderr.String()))
	}
	out := make([]float64, len(f))
	for i, s := range f {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("time %q: %w", s, err)
		}
		out[i] = v * 1000
	}
	return out, nil
}

func phaseMs(ph proto.Phases) []float64 {
	var out []float64
	for _, d := range []time.Duration{ph.NameLookup, ph.Connect, ph.AppConnect, ph.PreTransfer, ph.StartTransfer, ph.Total} {
		out = append(out, float64(d.Nanoseconds())/1e6)
	}
	return out
}

func column(rows [][]float64, k int) []float64 {
	var out []float64
	for _, r := range rows {
		out = append(out, r[k])
	}
	return out
}
