package reqresp

import (
	"testing"
	"time"

	"tlab/internal/proto"
)

// TestTransportKeepsGosIdleTimeout: study A's HTTP/1.1 client is net/http's
// Transport "with its defaults": idle connections live 90 s (Go's
// http.DefaultTransport), whatever settings.idle_timeout says for the
// strict client; HTTP/2's one connection follows the setting.
func TestTransportKeepsGosIdleTimeout(t *testing.T) {
	s := proto.DefaultSettings()
	if got := transportIdleTimeout(httpProto{tls: true}, s); got != 90*time.Second {
		t.Errorf("h1 transport keeps idle connections %v, want net/http's 90s", got)
	}
	if got := transportIdleTimeout(httpProto{tls: true, h2: true}, s); got != s.IdleTimeout.D() {
		t.Errorf("h2 keeps its connection %v, want settings.idle_timeout %v", got, s.IdleTimeout.D())
	}
}
