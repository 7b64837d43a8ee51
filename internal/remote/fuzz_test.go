package remote

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeRequest: no input crashes the control channel's decoder, and
// what it accepts survives a round trip unchanged.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"seq":1,"op":"pair","args":{"token":"abc"}}`,
		`{"seq":2,"op":"hello","args":{"version":"tlab-control/2"}}`,
		`{"seq":3,"op":"ping"}`,
		`{"seq":4,"op":"serve","args":{"kind":"request-response","protocol":"tls","port":4433,"settings":{"tls_version":"1.3"}}}`,
		`{"seq":5,"op":"stop","args":{"id":1}}`,
		`{"seq":6,"op":"noise","args":{"ms":500}}`,
		`{"seq":7,"op":"bye"}`,
		`{"seq":0,"op":"ping"}`, `{"seq":1,"op":"exec"}`, `{"seq":1,"op":"ping","x":1}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			return
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", r, err)
		}
		r2, err := DecodeRequest(out)
		if err != nil || r2.Seq != r.Seq || r2.Op != r.Op {
			t.Fatalf("round trip: %q -> %+v -> %q -> %+v, %v", b, r, out, r2, err)
		}
		// The arguments of every operation decode strictly or are refused.
		for _, v := range []any{&PairArgs{}, &HelloArgs{}, &ServeArgs{}, &StopArgs{}, &NoiseArgs{}, &ProbeArgs{}, &ArrivalsArgs{}} {
			decodeArgs(r, v)
		}
	})
}

// FuzzReadFrame: a frame reader never reads past its limit nor panics, and
// what it reads is what a writer framed.
func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	WriteFrame(&b, Request{Seq: 1, Op: OpPing})
	f.Add(b.Bytes())
	f.Add([]byte("\x7f\xff\xff\xff"))
	f.Add([]byte("\x00\x00\x00\x03ab"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadFrame(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(got) > MaxFrame || len(data) < 4+len(got) || !bytes.Equal(got, data[4:4+len(got)]) {
			t.Fatalf("read %d bytes from %d", len(got), len(data))
		}
	})
}

// FuzzParsePairing: no pairing file crashes the parser, and one it accepts
// names a well-formed fingerprint and token and survives a round trip.
func FuzzParsePairing(f *testing.F) {
	id, _ := NewIdentity("fuzz")
	tok, _ := NewToken()
	f.Add(Pairing{Agent: id.Fingerprint, Token: tok}.Marshal())
	f.Add([]byte("tlab pairing v1\nagent zz\ntoken x\n"))
	f.Add([]byte("tlab pairing v1\n# a comment\n\nagent " + id.Fingerprint + "\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePairing(data)
		if err != nil {
			return
		}
		if !validFingerprint(p.Agent) || p.Token == "" {
			t.Fatalf("accepted %+v", p)
		}
		q, err := ParsePairing(p.Marshal())
		if err != nil || q != p {
			t.Fatalf("round trip %+v -> %+v, %v", p, q, err)
		}
	})
}

// FuzzParseProbe: no datagram crashes the prober's parser (it faces the
// network), and what it accepts survives a round trip.
func FuzzParseProbe(f *testing.F) {
	f.Add(ProbePacket{Kind: 'E', Seq: 7, TimeNs: 123, AgentNs: 456}.Marshal(200))
	f.Add(ProbePacket{Kind: 'T', Seq: 16, TimeNs: 1200}.Marshal(25))
	f.Add([]byte("TLP2X"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProbe(b)
		if err != nil {
			return
		}
		q, err := ParseProbe(p.Marshal(len(b)))
		if err != nil || q != p {
			t.Fatalf("round trip %+v -> %+v, %v", p, q, err)
		}
	})
}
