package emu

import (
	"strings"
	"testing"
)

// TestSpecValidateNamesTheField: each field out of range is refused with
// its name; a good spec passes; Start refuses a spec whose ports do not
// match the sockets before it starts any process.
func TestSpecValidateNamesTheField(t *testing.T) {
	good := EngineSpec{EngineOptions: EngineOptions{Mode: ModeBusy}, CPU: -1, MTU: 1500, Links: []LinkSpec{{Name: "l", Ports: []PortSpec{{Side: SideA}, {Side: SideB, HostMAC: []byte{2, 0, 0, 0, 0, 1}}}}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("a good spec: %v", err)
	}
	for want, edit := range map[string]func(*EngineSpec){
		"mode":              func(s *EngineSpec) { s.Mode = "fast" },
		"arrival":           func(s *EngineSpec) { s.Arrival = "nic" },
		"spin_ns":           func(s *EngineSpec) { s.SpinNs = -1 },
		"realtime_priority": func(s *EngineSpec) { s.RealtimePriority = 100 },
		"cpu":               func(s *EngineSpec) { s.CPU = -2 },
		"mtu":               func(s *EngineSpec) { s.MTU = 67 },
		"side 2":            func(s *EngineSpec) { s.Links[0].Ports[0].Side = 2 },
		"MAC of 5 bytes":    func(s *EngineSpec) { s.Links[0].Ports[1].HostMAC = []byte{1, 2, 3, 4, 5} },
	} {
		s := good
		s.Links = []LinkSpec{{Name: "l", Ports: append([]PortSpec(nil), good.Links[0].Ports...)}}
		edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	if good.Ports() != 2 {
		t.Errorf("Ports() = %d, want 2", good.Ports())
	}
	if _, err := Start(good, nil); err == nil || !strings.Contains(err.Error(), "2 ports, 0 sockets") {
		t.Errorf("Start with no sockets for 2 ports: %v", err)
	}
}

// TestNextControl: requests are taken a line at a time; a partial line
// waits; an unknown op, an unknown field, two objects on a line and an
// endless line are errors.
func TestNextControl(t *testing.T) {
	op, rest, ok, err := nextControl([]byte("{\"op\":\"stats\"}\n{\"op\":\"st"))
	if op != "stats" || string(rest) != `{"op":"st` || !ok || err != nil {
		t.Fatalf("first request: %q %q %v %v", op, rest, ok, err)
	}
	if _, again, ok, err := nextControl(rest); ok || err != nil || string(again) != string(rest) {
		t.Errorf("a partial line: ok %v err %v", ok, err)
	}
	for _, bad := range []string{"{\"op\":\"exec\"}\n", "{\"op\":\"stop\",\"cmd\":1}\n", "{\"op\":\"stop\"}{\"op\":\"stats\"}\n", "null x\n", strings.Repeat("a", maxControlLine+1)} {
		if _, _, ok, err := nextControl([]byte(bad)); ok || err == nil {
			t.Errorf("%.40q: accepted", bad)
		}
	}
}
