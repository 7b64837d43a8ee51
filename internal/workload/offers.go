package workload

import (
	"errors"
	"fmt"

	"tlab/internal/proto"
)

// A Capability is something the host playing a role may offer beyond
// playing the role in the cell's own workload: serving a kind of server,
// running a program, running a second workload beside the cell's. A site's
// hosts declare what each role's host offers (Offering); the runners ask
// (Offers, Require) rather than checking which site made the hosts.
type Capability string

const (
	// RunCommands is running a program in the role's network: a stack
	// given as commands (its server's and its client's command lines).
	RunCommands Capability = "commands"
	// RunBeside is playing the role for a second workload beside the
	// cell's (beside:), its servers on ports of its own.
	RunBeside Capability = "beside"
)

// ServeKind is the capability of serving a registered kind of server
// (RegisterServer) on the role's host.
func ServeKind(kind string) Capability { return Capability("serve " + kind) }

// capabilityDocs say what a capability is, for the refusal.
var capabilityDocs = map[Capability]string{
	RunCommands: "running a program in the role's network",
	RunBeside:   "playing the role for a workload beside the cell's",
}

// Offering is implemented by Hosts whose roles' hosts do not all offer
// every capability: a tlab agent across a real path serves the kinds it
// names and runs no command. Hosts without it offer every registered
// server kind and a workload beside on every role, and commands where
// the role's network can start a program (proto.ProcessHost).
type Offering interface {
	// Offers says whether the host playing role offers c.
	Offers(role string, c Capability) bool
}

// Offers says whether the host that hosts give role offers c: what the
// hosts declare (Offering), else the default above.
func Offers(hosts Hosts, role string, c Capability) bool {
	if o, ok := hosts.(Offering); ok {
		return o.Offers(role, c)
	}
	if c == RunCommands {
		_, ok := hosts.Net(role).(proto.ProcessHost)
		return ok
	}
	return true
}

// ErrNotOffered is what Require's error is (errors.Is).
var ErrNotOffered = errors.New("not offered")

// NotOffered names the capability a role's host lacks.
type NotOffered struct {
	Role       string
	Capability Capability
}

func (e NotOffered) Error() string {
	what := string(e.Capability)
	if doc, ok := capabilityDocs[e.Capability]; ok {
		what = fmt.Sprintf("%s (%s)", e.Capability, doc)
	}
	return fmt.Sprintf("the host playing role %s here does not offer %s", e.Role, what)
}

func (e NotOffered) Is(target error) bool { return target == ErrNotOffered }

// Require returns a NotOffered for the first role whose host lacks one of
// caps, or nil when every role's host offers them all.
func Require(hosts Hosts, roles []string, caps ...Capability) error {
	for _, role := range roles {
		for _, c := range caps {
			if !Offers(hosts, role, c) {
				return NotOffered{Role: role, Capability: c}
			}
		}
	}
	return nil
}
