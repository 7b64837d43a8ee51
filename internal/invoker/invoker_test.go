package invoker

import (
	"errors"
	"os/user"
	"strings"
	"testing"
)

// passwd is a user database of two users.
var passwd = []user.User{{Uid: "1000", Gid: "1000", Username: "alice", HomeDir: "/home/alice"}, {Uid: "65534", Gid: "65534", Username: "nobody", HomeDir: "/nonexistent"}}

func fakeSys(euid int, env map[string]string) Sys {
	return Sys{
		Euid:   euid,
		Getenv: func(k string) string { return env[k] },
		LookupID: func(id string) (*user.User, error) {
			for _, u := range passwd {
				if u.Uid == id {
					return &u, nil
				}
			}
			return nil, user.UnknownUserIdError(0)
		},
		Lookup: func(name string) (*user.User, error) {
			for _, u := range passwd {
				if u.Username == name {
					return &u, nil
				}
			}
			return nil, errors.New("unknown user " + name)
		},
		UIDMap: "         0          0 4294967295\n", // the initial user namespace's
	}
}

// TestFindTheInvokingUser: as root, the user sudo, doas or pkexec names is
// whom commands run as (sudo's SUDO_UID and SUDO_GID, doas's DOAS_USER by
// name, pkexec's PKEXEC_UID by uid, as their manuals give them); where none
// is set, or the one set does not name a user, the commands run as root
// and a warning says so (never silently). Without root nothing changes,
// and root of tlab's own user namespace is the user it maps to.
func TestFindTheInvokingUser(t *testing.T) {
	for _, c := range []struct {
		name      string
		euid      int
		env       map[string]string
		uidMap    string
		uid, gid  int // -1: no credential (commands run as tlab runs)
		root      bool
		warning   string
		nameHolds string
	}{
		{"sudo", 0, map[string]string{"SUDO_UID": "65534", "SUDO_GID": "65534"}, "", 65534, 65534, false, "", "nobody (uid 65534), through sudo"},
		{"sudo from root", 0, map[string]string{"SUDO_UID": "0", "SUDO_GID": "0"}, "", -1, 0, true, "", "root"},
		{"sudo, unreadable", 0, map[string]string{"SUDO_UID": "x65534", "SUDO_GID": "65534"}, "", -1, 0, true, `SUDO_UID="x65534"`, "root"},
		{"sudo, no gid", 0, map[string]string{"SUDO_UID": "65534"}, "", -1, 0, true, "SUDO_GID", "root"},
		{"doas", 0, map[string]string{"DOAS_USER": "alice"}, "", 1000, 1000, false, "", "alice (uid 1000), through doas"},
		{"doas, unknown user", 0, map[string]string{"DOAS_USER": "mallory"}, "", -1, 0, true, `DOAS_USER="mallory"`, "root"},
		{"pkexec", 0, map[string]string{"PKEXEC_UID": "1000"}, "", 1000, 1000, false, "", "alice (uid 1000), through pkexec"},
		{"pkexec, unknown uid", 0, map[string]string{"PKEXEC_UID": "4242"}, "", -1, 0, true, "PKEXEC_UID=4242", "root"},
		{"pkexec, not a number", 0, map[string]string{"PKEXEC_UID": "-1"}, "", -1, 0, true, `PKEXEC_UID="-1"`, "root"},
		{"root, nobody invoked", 0, map[string]string{}, "", -1, 0, true, "no invoking user", "root"},
		{"not root", 1000, map[string]string{"SUDO_UID": "65534", "SUDO_GID": "65534"}, "", -1, 0, false, "", "alice (uid 1000), your own user"},
		{"tlab's user namespace", 0, map[string]string{}, "0 1000 1\n", -1, 0, false, "", "uid 1000 (root only inside"},
	} {
		s := fakeSys(c.euid, c.env)
		if c.uidMap != "" {
			s.UIDMap = c.uidMap
		}
		u := s.Find()
		switch {
		case c.uid < 0 && u.Cred != nil:
			t.Errorf("%s: runs as %+v, want as tlab runs", c.name, *u.Cred)
		case c.uid >= 0 && (u.Cred == nil || int(u.Cred.Uid) != c.uid || int(u.Cred.Gid) != c.gid):
			t.Errorf("%s: credential %+v, want uid %d gid %d", c.name, u.Cred, c.uid, c.gid)
		}
		if u.Root != c.root {
			t.Errorf("%s: root %v, want %v", c.name, u.Root, c.root)
		}
		if c.warning == "" && u.Warning != "" || c.warning != "" && (!strings.Contains(u.Warning, c.warning) || !strings.Contains(u.Warning, "run as root")) {
			t.Errorf("%s: warning %q, want one naming %q and saying the commands run as root", c.name, u.Warning, c.warning)
		}
		if !strings.Contains(u.Name, c.nameHolds) {
			t.Errorf("%s: named %q, want %q", c.name, u.Name, c.nameHolds)
		}
		// The invoking user's own HOME, USER and LOGNAME go with them.
		if c.uid > 0 {
			want := passwd[0]
			if c.uid == 65534 {
				want = passwd[1]
			}
			if got := strings.Join(u.Env, " "); got != "HOME="+want.HomeDir+" USER="+want.Username+" LOGNAME="+want.Username {
				t.Errorf("%s: environment %q, want the user's HOME, USER and LOGNAME", c.name, got)
			}
		} else if len(u.Env) > 0 {
			t.Errorf("%s: environment %q for commands that run as tlab does", c.name, u.Env)
		}
	}
}
