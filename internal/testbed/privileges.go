package testbed

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Capabilities a testbed needs: creating namespaces and joining them
// (CAP_SYS_ADMIN), configuring interfaces (CAP_NET_ADMIN) and opening packet
// sockets (CAP_NET_RAW).
var neededCaps = []struct {
	bit  uint
	name string
}{{12, "CAP_NET_ADMIN"}, {13, "CAP_NET_RAW"}, {21, "CAP_SYS_ADMIN"}}

// ErrPrivileges is returned when the process lacks a needed capability.
var ErrPrivileges = errors.New("insufficient privileges")

// CheckPrivileges reports, in plain words, which capabilities are missing
// and what to do about it.
func CheckPrivileges() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fmt.Errorf("reading capabilities: %w", err)
	}
	var eff uint64
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	var missing []string
	for _, c := range neededCaps {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%w: tlab builds network namespaces and needs %s.\n"+
		"  Run it as root (sudo tlab ...), or grant the binary the capabilities:\n"+
		"    sudo setcap cap_net_admin,cap_net_raw,cap_sys_admin+ep $(command -v tlab)\n"+
		"  or run it inside a user namespace that maps you to root: unshare -rn tlab ...",
		ErrPrivileges, strings.Join(missing, ", "))
}
