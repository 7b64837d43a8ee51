package mqtt

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
	"tlab/internal/pki"
	"tlab/internal/proto"
	"tlab/internal/testbed/tbtest"
)

func TestMain(m *testing.M) { tbtest.Main(m) }

// TestMQTTDeliversInOrder publishes through a real broker on the far side
// of a 10 ms RTT link, for each MQTT transport, version and broker: every
// message arrives once, in order, and no delivery beats the two link
// crossings it needs.
func TestMQTTDeliversInOrder(t *testing.T) {
	tb := tbtest.ClientServer(t, 5*time.Millisecond)
	ip, _ := tb.Addr("client", "server")
	certs, err := pki.NewCertificates(ip)
	if err != nil {
		t.Fatal(err)
	}
	port := 6000
	for _, name := range []string{"mqtt-tcp", "mqtt-tls", "mqtt-quic"} {
		for _, version := range []string{"3.1.1", "5.0"} {
			for _, broker := range []string{proto.BrokerEmbedded, proto.BrokerMosquitto} {
				port++
				t.Run(fmt.Sprintf("%s/%s/%s", name, version, broker), func(t *testing.T) {
					stack, _ := proto.Lookup(name)
					ps, _ := proto.As[proto.PubSub](stack)
					if err := ps.CheckBroker(broker); err != nil {
						if _, lookErr := exec.LookPath("mosquitto"); lookErr != nil || name == "mqtt-quic" {
							t.Skip(err)
						}
						t.Fatal(err)
					}
					s := proto.DefaultSettings()
					s.Certs, s.MQTTVersion, s.ZeroRTT = certs, version, true
					b, err := ps.StartBroker(tb.Host("server"), port, s, broker)
					if err != nil {
						t.Fatal(err)
					}
					defer b.Close()
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					defer cancel()
					addr := proto.HostPort(ip.String(), port)
					var mu sync.Mutex
					var got []string
					var at []time.Time
					sub, err := ps.NewPubSubClient(tb.Host("client"), addr, s, proto.PubSubOptions{ClientID: "sub", OnMessage: func(_ string, payload []byte, t time.Time) {
						mu.Lock()
						got, at = append(got, string(payload)), append(at, t)
						mu.Unlock()
					}})
					if err != nil {
						t.Fatal(err)
					}
					if _, err := sub.Connect(ctx); err != nil {
						t.Fatal(err)
					}
					defer sub.Disconnect()
					if err := sub.Subscribe(ctx, "t/1", 1); err != nil {
						t.Fatal(err)
					}
					pub, err := ps.NewPubSubClient(tb.Host("client"), addr, s, proto.PubSubOptions{ClientID: "pub"})
					if err != nil {
						t.Fatal(err)
					}
					var setups []proto.ConnSetup
					const n = 10
					sent := make([]time.Time, n)
					for i := 0; i < n; i++ {
						// Reconnect for the last two: the TLS session and
						// QUIC's 0-RTT come into play.
						if i == 0 || i >= n-2 {
							pub.Disconnect()
							st, err := pub.Connect(ctx)
							if err != nil {
								t.Fatalf("connect %d: %v", len(setups)+1, err)
							}
							setups = append(setups, st)
						}
						sent[i] = time.Now()
						if err := pub.Publish(ctx, "t/1", 1, []byte(fmt.Sprint(i))); err != nil {
							t.Fatalf("publish %d: %v", i, err)
						}
					}
					deadline := time.Now().Add(5 * time.Second)
					for time.Now().Before(deadline) {
						mu.Lock()
						k := len(got)
						mu.Unlock()
						if k >= n {
							break
						}
						time.Sleep(10 * time.Millisecond)
					}
					pub.Disconnect()
					mu.Lock()
					defer mu.Unlock()
					if len(got) != n {
						t.Fatalf("got %d messages, want %d: %v", len(got), n, got)
					}
					for i, g := range got {
						if g != fmt.Sprint(i) {
							t.Errorf("message %d is %q: out of order", i, g)
						}
						if d := at[i].Sub(sent[i]); d < 10*time.Millisecond {
							t.Errorf("message %d delivered in %v, under the two 5 ms crossings", i, d)
						}
					}
					if pub.Connections() != 3 {
						t.Errorf("publisher opened %d connections, want 3", pub.Connections())
					}
					first, second := setups[0], setups[1]
					switch name {
					case "mqtt-quic":
						if first.EarlyData || !second.EarlyData || !second.Resumed {
							t.Errorf("0-RTT: first connection %+v, second %+v; want 0-RTT only on the second", first, second)
						}
					case "mqtt-tls":
						if first.Resumed || !second.Resumed {
							t.Errorf("TLS resumption: first %v, second %v; want only the second", first.Resumed, second.Resumed)
						}
						if second.Handshake <= 0 || second.Connect <= 0 {
							t.Errorf("phases missing: %+v", second)
						}
					}
				})
			}
		}
	}
}

// TestMQTTBrokerDownIsAClearError: connecting where no broker listens
// fails promptly, for every transport, with an error that says so.
func TestMQTTBrokerDownIsAClearError(t *testing.T) {
	tb := tbtest.ClientServer(t, time.Millisecond)
	ip, _ := tb.Addr("client", "server")
	certs, err := pki.NewCertificates(ip)
	if err != nil {
		t.Fatal(err)
	}
	s := proto.DefaultSettings()
	s.Certs = certs
	for _, name := range []string{"mqtt-tcp", "mqtt-tls", "mqtt-quic"} {
		stack, _ := proto.Lookup(name)
		ps, _ := proto.As[proto.PubSub](stack)
		c, err := ps.NewPubSubClient(tb.Host("client"), proto.HostPort(ip.String(), 7999), s, proto.PubSubOptions{ClientID: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		_, err = c.Connect(ctx)
		cancel()
		if err == nil {
			t.Errorf("%s: connected to a port where no broker listens", name)
			continue
		}
		// TCP is refused at once; QUIC hears nothing back (the kernel's
		// ICMP port unreachable ends it, or the context does).
		if name != "mqtt-quic" && (!strings.Contains(err.Error(), "refused") || time.Since(start) > time.Second) {
			t.Errorf("%s: after %v: %v; want a prompt refusal", name, time.Since(start), err)
		}
		t.Logf("%s: %v", name, err)
	}
}
