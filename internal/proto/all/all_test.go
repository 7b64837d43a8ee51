package all

import (
	"slices"
	"strings"
	"testing"

	"tlab/internal/proto"
)

// TestEveryCapabilityHasAProtocol: with every family registered, each
// capability is offered by at least one protocol, and the families give
// the protocols the studies use.
func TestEveryCapabilityHasAProtocol(t *testing.T) {
	for _, c := range proto.Capabilities() {
		if len(proto.NamesWith(c)) == 0 {
			t.Errorf("no protocol can %s", c)
		}
	}
	for c, want := range map[proto.Capability]string{
		proto.CapRequestResponse: "h1, h1s, h2, h3, quic, quic-streams, tcp, tls",
		proto.CapFetch:           "h1, h1s, h2, h3",
		proto.CapFrames:          "mpegts, quic-dgram, quic-streams, rtp, tcp, udp",
		proto.CapPubSub:          "mqtt-quic, mqtt-tcp, mqtt-tls",
	} {
		got := proto.NamesWith(c)
		for _, name := range strings.Split(want, ", ") {
			if !slices.Contains(got, name) {
				t.Errorf("%s: %v lacks %s", c, got, name)
			}
		}
	}
}

// TestEveryProtocolDeclaresKnownOptions: every protocol that speaks TLS or
// TCP declares the settings it uses, and CheckOptions refuses a setting
// none of a scenario's protocols honours, naming those that do.
func TestEveryProtocolDeclaresKnownOptions(t *testing.T) {
	for _, name := range proto.Names() {
		s, _ := proto.Lookup(name)
		if len(s.Options()) == 0 && !s.Can(proto.CapFrames) {
			t.Errorf("%s declares no option", name)
		}
		if s.Doc() == "" {
			t.Errorf("%s has no description", name)
		}
	}
	if err := proto.CheckOptions([]string{"zero_rtt"}, []string{"tcp", "h3"}); err != nil {
		t.Errorf("h3 uses zero_rtt: %v", err)
	}
	if err := proto.CheckOptions([]string{"zero_rtt"}, []string{"tcp", "h1s"}); err == nil || !strings.Contains(err.Error(), "applies to h3, mqtt-quic, quic, quic-migrate, quic-redial, quic-streams") {
		t.Errorf("zero_rtt on tcp and h1s: %v", err)
	}
}
