package testbed

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
)

// The egress's rules as nft text: the specification the netlink rules
// (nftrules_linux.go) are checked against, rule by rule, as the kernel
// lists them back.

func gatewayRulesText() string {
	return fmt.Sprintf(`table ip tlab {
	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		oifname %[1]q masquerade
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname %[1]q ct state established,related accept
		iifname %[1]q drop
	}
}
`, gatewayIface)
}

func outsideRulesText(rec *egressRecord, gatewayIP net.IP) string {
	var b strings.Builder
	fmt.Fprintf(&b, `table ip %s {
	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr %s oifname != "tlx*" masquerade
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname %[3]q accept
		oifname %[3]q ct state established,related accept
		oifname %[3]q drop
`, rec.Table, gatewayIP, rec.Veth)
	for out := range rec.Forwarding {
		fmt.Fprintf(&b, "\t\tiifname %q oifname != \"tlx*\" drop\n", out)
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// TestNetlinkRulesAreTheNftRules: in a namespace of the test's own, the
// tables made through netlink list (nft list table) exactly as the same
// rules loaded from their nft text.
func TestNetlinkRulesAreTheNftRules(t *testing.T) {
	requirePrivileges(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("needs nftables' nft to load and list the text")
	}
	ns, err := newNamespace()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	gw := net.IPv4(198, 19, 0, 2).To4()
	rec := func(table string) *egressRecord {
		return &egressRecord{Table: table, Veth: "tlx0123abcd", Forwarding: map[string]string{"eth0": "0"}}
	}
	nft := func(stdin string, args ...string) (string, error) {
		var out string
		err := inNamespace(ns, func() error {
			cmd := exec.Command("nft", args...)
			cmd.Stdin = strings.NewReader(stdin)
			b, err := cmd.CombinedOutput()
			out = string(b)
			return err
		})
		return out, err
	}
	for _, c := range []struct {
		name          string
		text          string
		netlink       ruleset
		textTable, nl string
	}{
		{"outside", outsideRulesText(rec("tlab_0000000a"), gw), outsideRuleset(rec("tlab_0000000b"), gw), "tlab_0000000a", "tlab_0000000b"},
		{"gateway", gatewayRulesText(), gatewayRuleset(), "tlab", "tlab"},
	} {
		if out, err := nft(c.text, "-f", "-"); err != nil {
			t.Fatalf("%s: nft -f: %v: %s", c.name, err, out)
		}
		want, err := nft("", "list", "table", "ip", c.textTable)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nft("", "delete", "table", "ip", c.textTable); err != nil {
			t.Fatal(err)
		}
		if err := inNamespace(ns, func() error { return c.netlink.apply(-1) }); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := nft("", "list", "table", "ip", c.nl)
		if err != nil {
			t.Fatal(err)
		}
		if got = strings.ReplaceAll(got, c.nl, c.textTable); got != want {
			t.Errorf("%s: netlink made\n%s\nthe nft text makes\n%s", c.name, got, want)
		}
	}
}
