package testbed

import (
	"fmt"
	"net"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The egress's nftables rules, made through netlink: every name goes into
// the kernel as an attribute of its own, and no text is parsed.

// ruleset is one ip table of a nat postrouting chain ("post") and a
// filter forward chain ("forward"), each with its rules.
type ruleset struct {
	table         string
	post, forward [][]expr.Any
}

// apply adds the table, its chains and rules in one transaction in the
// namespace netnsFD (-1: the calling thread's).
func (rs ruleset) apply(netnsFD int) error {
	var opts []nftables.ConnOption
	if netnsFD >= 0 {
		opts = append(opts, nftables.WithNetNSFd(netnsFD))
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	accept := nftables.ChainPolicyAccept
	t := conn.AddTable(&nftables.Table{Name: rs.table, Family: nftables.TableFamilyIPv4})
	post := conn.AddChain(&nftables.Chain{Name: "post", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource, Policy: &accept})
	forward := conn.AddChain(&nftables.Chain{Name: "forward", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	for _, r := range rs.post {
		conn.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: r})
	}
	for _, r := range rs.forward {
		conn.AddRule(&nftables.Rule{Table: t, Chain: forward, Exprs: r})
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("nftables: table %s: %w", rs.table, err)
	}
	return nil
}

// ifnameBytes is name as the kernel compares an exact interface name:
// NUL-padded to IFNAMSIZ.
func ifnameBytes(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

// ifMatch compares the input (iif) or output interface's name with name;
// a prefix ("tlx", compared over its own length) matches as nft's "tlx*".
func ifMatch(out bool, op expr.CmpOp, name []byte) []expr.Any {
	key := expr.MetaKeyIIFNAME
	if out {
		key = expr.MetaKeyOIFNAME
	}
	return []expr.Any{&expr.Meta{Key: key, Register: 1}, &expr.Cmp{Op: op, Register: 1, Data: name}}
}

// established matches ct state established,related.
func established() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  binaryutil.NativeEndian.PutUint32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(0)},
	}
}

func verdict(k expr.VerdictKind) expr.Any { return &expr.Verdict{Kind: k} }

func rule(parts ...[]expr.Any) []expr.Any {
	var r []expr.Any
	for _, p := range parts {
		r = append(r, p...)
	}
	return r
}

func one(e expr.Any) []expr.Any { return []expr.Any{e} }

// gatewayRuleset masquerades what leaves the gateway and lets in only
// replies (nft: oifname "up0" masquerade; iifname "up0" ct state
// established,related accept; iifname "up0" drop).
func gatewayRuleset() ruleset {
	up := ifnameBytes(gatewayIface)
	return ruleset{
		table: "tlab",
		post:  [][]expr.Any{rule(ifMatch(true, expr.CmpOpEq, up), one(&expr.Masq{}))},
		forward: [][]expr.Any{
			rule(ifMatch(false, expr.CmpOpEq, up), established(), one(verdict(expr.VerdictAccept))),
			rule(ifMatch(false, expr.CmpOpEq, up), one(verdict(expr.VerdictDrop))),
		},
	}
}

// outsideRuleset masquerades the gateway's traffic where it leaves the
// machine, lets in only replies to it, and forwards nothing else
// through an interface whose forwarding tlab turned on (nft: ip saddr
// GW oifname != "tlx*" masquerade; iifname VETH accept; oifname VETH ct
// state established,related accept; oifname VETH drop; per interface
// OUT: iifname OUT oifname != "tlx*" drop).
func outsideRuleset(rec *egressRecord, gatewayIP net.IP) ruleset {
	veth, tlx := ifnameBytes(rec.Veth), []byte("tlx")
	saddr := []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: gatewayIP.To4()},
	}
	rs := ruleset{
		table: rec.Table,
		post:  [][]expr.Any{rule(saddr, ifMatch(true, expr.CmpOpNeq, tlx), one(&expr.Masq{}))},
		forward: [][]expr.Any{
			rule(ifMatch(false, expr.CmpOpEq, veth), one(verdict(expr.VerdictAccept))),
			rule(ifMatch(true, expr.CmpOpEq, veth), established(), one(verdict(expr.VerdictAccept))),
			rule(ifMatch(true, expr.CmpOpEq, veth), one(verdict(expr.VerdictDrop))),
		},
	}
	for out := range rec.Forwarding {
		rs.forward = append(rs.forward, rule(ifMatch(false, expr.CmpOpEq, ifnameBytes(out)), ifMatch(true, expr.CmpOpNeq, tlx), one(verdict(expr.VerdictDrop))))
	}
	return rs
}
