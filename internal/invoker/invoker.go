// Package invoker finds the user on whose behalf tlab runs as root: the
// one who started it through sudo, doas or pkexec. Commands tlab runs for
// that user (a scenario's stacks, tlab shell's commands) run as them, not
// as root, as a CI runner runs a job's steps as its own user.
package invoker

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// User is whom commands run as.
type User struct {
	// Cred runs a command as the invoking user; nil runs it as tlab
	// itself runs.
	Cred *syscall.Credential
	// Name says whom, for messages: "alice (uid 1000, through sudo)",
	// "root", "uid 1000 (root only inside tlab's user namespace)".
	Name string
	// Root says the commands run as root of the machine.
	Root bool
	// Warning, when set, says that tlab runs as root without an invoking
	// user it could read, so that commands run as root.
	Warning string
	// Env, with Cred, is the user's HOME, USER and LOGNAME, to put after
	// tlab's own environment (sudo may have set HOME to root's): their
	// shell's settings, their tools' files.
	Env []string
}

// Sys is what Find reads of the process: its effective uid, its
// environment, the user database and its user namespace's uid map.
type Sys struct {
	Euid     int
	Getenv   func(string) string
	LookupID func(uid string) (*user.User, error)
	Lookup   func(name string) (*user.User, error)
	// UIDMap is /proc/self/uid_map's text ("" when unknown).
	UIDMap string
}

// Host is this process's Sys.
func Host() Sys {
	m, _ := os.ReadFile("/proc/self/uid_map")
	return Sys{Euid: os.Geteuid(), Getenv: os.Getenv, LookupID: user.LookupId, Lookup: user.Lookup, UIDMap: string(m)}
}

// Find is whom commands run as for this process.
func Find() User { return Host().Find() }

// Find says whom commands run as: tlab's own user when it does not run as
// root; as root, the invoking user named by sudo (SUDO_UID, SUDO_GID),
// doas (DOAS_USER) or pkexec (PKEXEC_UID), in that order; root itself,
// with a warning, when none is set or the one set cannot be read (a
// malformed variable is not taken as "no invoking user" silently).
func (s Sys) Find() User {
	if s.Euid != 0 {
		return User{Name: fmt.Sprintf("%s, your own user", s.nameOf(s.Euid))}
	}
	if host, ok := namespacedRoot(s.UIDMap); ok {
		// Root of the user namespace tlab re-ran itself in: the kernel
		// maps it to the user who started tlab, who holds no more.
		return User{Name: fmt.Sprintf("uid %d (root only inside tlab's user namespace)", host)}
	}
	asRoot := func(why string) User {
		return User{Name: "root", Root: true, Warning: why + ": the commands run as root"}
	}
	switch {
	case s.Getenv("SUDO_UID") != "":
		uid, err1 := strconv.ParseUint(s.Getenv("SUDO_UID"), 10, 32)
		gid, err2 := strconv.ParseUint(s.Getenv("SUDO_GID"), 10, 32)
		if err1 != nil || err2 != nil {
			return asRoot(fmt.Sprintf("tlab runs through sudo but SUDO_UID=%q, SUDO_GID=%q do not name a user", s.Getenv("SUDO_UID"), s.Getenv("SUDO_GID")))
		}
		return s.as(uint32(uid), uint32(gid), "sudo")
	case s.Getenv("DOAS_USER") != "":
		name := s.Getenv("DOAS_USER")
		u, err := s.Lookup(name)
		if err != nil {
			return asRoot(fmt.Sprintf("tlab runs through doas but DOAS_USER=%q is not a user here (%v)", name, err))
		}
		return s.fromEntry(u, "doas")
	case s.Getenv("PKEXEC_UID") != "":
		id := s.Getenv("PKEXEC_UID")
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return asRoot(fmt.Sprintf("tlab runs through pkexec but PKEXEC_UID=%q is not a uid", id))
		}
		u, err := s.LookupID(id)
		if err != nil {
			return asRoot(fmt.Sprintf("tlab runs through pkexec but PKEXEC_UID=%s is not a user here (%v)", id, err))
		}
		return s.fromEntry(u, "pkexec")
	}
	return asRoot("tlab runs as root and no invoking user is set (SUDO_UID, DOAS_USER, PKEXEC_UID)")
}

// fromEntry is the user of a passwd entry.
func (s Sys) fromEntry(u *user.User, via string) User {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return User{Name: "root", Root: true, Warning: fmt.Sprintf("tlab runs through %s but user %s has no numeric uid and gid: the commands run as root", via, u.Username)}
	}
	return s.as(uint32(uid), uint32(gid), via)
}

// as is the invoking user uid:gid; root invoking tlab through a tool
// stays root, without a warning.
func (s Sys) as(uid, gid uint32, via string) User {
	if uid == 0 {
		return User{Name: "root (who started tlab through " + via + ")", Root: true}
	}
	u := User{Cred: &syscall.Credential{Uid: uid, Gid: gid}, Name: fmt.Sprintf("%s, through %s", s.nameOf(int(uid)), via)}
	if s.LookupID != nil {
		if e, err := s.LookupID(strconv.FormatUint(uint64(uid), 10)); err == nil && e.Username != "" {
			u.Env = []string{"HOME=" + e.HomeDir, "USER=" + e.Username, "LOGNAME=" + e.Username}
		}
	}
	return u
}

// nameOf is "alice (uid 1000)", or "uid 1000" for a uid without a name.
func (s Sys) nameOf(uid int) string {
	if s.LookupID != nil {
		if u, err := s.LookupID(strconv.Itoa(uid)); err == nil && u.Username != "" {
			return fmt.Sprintf("%s (uid %d)", u.Username, uid)
		}
	}
	return fmt.Sprintf("uid %d", uid)
}

// namespacedRoot says whether uid 0 is root of a user namespace (its map
// sends 0 to another uid, or only a part of the range) and whom it maps to.
func namespacedRoot(uidMap string) (int, bool) {
	for _, line := range strings.Split(strings.TrimSpace(uidMap), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "0" {
			continue
		}
		host, err1 := strconv.Atoi(f[1])
		n, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		return host, host != 0 || n != 1<<32-1
	}
	return 0, false
}
