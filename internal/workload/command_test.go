package workload

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tlab/internal/proto"
	"tlab/internal/results"
)

// TestTemplatesBecomeVariableReferences: each placeholder becomes a
// reference to its environment variable, quoted as one word where it
// stands (by hand, from POSIX's quoting rules: outside quotes "${V}",
// inside double quotes and $(( )) ${V}, inside single quotes the quote is
// closed, "${V}" put, and reopened); the text around is kept byte for
// byte, and a placeholder with no value stays as it was.
func TestTemplatesBecomeVariableReferences(t *testing.T) {
	values := map[string]string{"server": "10.0.0.2:4433", "listen": ":4433", "dir": "/d", "workload.name": "x", "workload.payload_bytes": "256"}
	for _, c := range []struct{ tmpl, want string }{
		{"c --to {server} -o {dir}/e", `c --to "${TLAB_SERVER_ADDR}" -o "${TLAB_DIR}"/e`},
		{`echo "name: {workload.name}"`, `echo "name: ${TLAB_WORKLOAD_NAME}"`},
		{`echo 'name: {workload.name}'`, `echo 'name: '"${TLAB_WORKLOAD_NAME}"''`},
		{`l $(( {workload.payload_bytes} + 12 ))`, `l $(( ${TLAB_WORKLOAD_PAYLOAD_BYTES} + 12 ))`},
		{`x "$(echo {listen})" {listen}`, `x "$(echo "${TLAB_LISTEN}")" "${TLAB_LISTEN}"`},
		{`a \'{listen} "\"{listen}" {unknown}`, `a \'"${TLAB_LISTEN}" "\"${TLAB_LISTEN}" {unknown}`},
		{`$(( (1 + {workload.payload_bytes}) ))'{listen}'`, `$(( (1 + ${TLAB_WORKLOAD_PAYLOAD_BYTES}) ))''"${TLAB_LISTEN}"''`},
	} {
		got, err := script(c.tmpl, values)
		if err != nil || got != c.want {
			t.Errorf("%s\\n got  %s (%v)\\n want %s", c.tmpl, got, err, c.want)
		}
	}
	if _, err := script("$(( {workload.name} + 1 ))", map[string]string{"workload.name": "a[$(id)]"}); err == nil || !strings.Contains(err.Error(), "not a number") {
		t.Errorf("a value that is not a number inside $(( )): %v", err)
	}
}

// hostile is a value from someone else's file: command substitutions in
// both forms, both quotes, a separator and a newline.
const hostile = `a"b'c $(touch MARK) ` + "`touch MARK`" + `; touch MARK
"$(touch MARK)"`

// TestHostileValuesRunNoCode: a value full of shell syntax reaches the
// command as the value, whether the placeholder stands bare, inside double
// quotes, inside single quotes or inside a command substitution, under
// /bin/sh and under bash: each prints exactly the value, and the marker
// file the value would create is never made.
func TestHostileValuesRunNoCode(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "x")
	shells := []string{"/bin/sh"}
	if bash, err := exec.LookPath("bash"); err == nil {
		shells = append(shells, bash)
	}
	// The second value has no quote to unbalance the line: today's
	// single-quoting ran it inside double quotes.
	for _, value := range []string{strings.ReplaceAll(hostile, "MARK", mark), "$(touch " + mark + ")"} {
		values := map[string]string{"workload.name": value, "dir": dir}
		for _, sh := range shells {
			for _, tmpl := range []string{
				`printf '%s' {workload.name}`,
				`printf '%s' "{workload.name}"`,
				`printf '%s' 'before{workload.name}after' | sed 's/^before//; s/after$//'`,
				`printf '%s' "$(printf '%s' {workload.name})"`,
				`v="{workload.name}"; printf '%s' "$v"`,
			} {
				line, err := script(tmpl, values)
				if err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(sh, "-c", line)
				cmd.Env = commandEnv(values)
				out, err := cmd.Output()
				if err != nil {
					t.Errorf("%s: %s: %v", sh, tmpl, err)
				}
				if string(out) != value {
					t.Errorf("%s: %s printed %q, want the value %q", sh, tmpl, out, value)
				}
				if _, err := os.Stat(mark); err == nil {
					t.Errorf("%s: %s ran code from the value: %s exists", sh, tmpl, mark)
					os.Remove(mark)
				}
			}
		}
	}
}

// processHosts are hosts whose processes run on this machine as they are
// (a stand-in for the testbed's namespaces).
type processHosts struct{ fakeHosts }

type localNet struct{ proto.Net }

func (localNet) StartProcess(cmd *exec.Cmd) (func() error, <-chan struct{}, error) {
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return func() error { cmd.Process.Kill(); <-done; return nil }, done, nil
}

func (processHosts) Net(string) proto.Net { return localNet{} }

// runCommandStack runs stack's commands in a cell directory as cred.
func runCommandStack(t *testing.T, stack CommandStack, cred *syscall.Credential, dir string) *recorder {
	t.Helper()
	rec := &recorder{notes: map[string]float64{}}
	env := &Env{Hosts: processHosts{}, Dir: dir,
		Emit:        func(r results.Record) { rec.mu.Lock(); rec.records = append(rec.records, r); rec.mu.Unlock() },
		StartWindow: func() {},
		Note:        func(string, float64) {},
		Fail:        func(why string) { rec.mu.Lock(); rec.failed = append(rec.failed, why); rec.mu.Unlock() },
	}
	c := Command{Base: Periodic{Interval: 10 * time.Millisecond, ReqSize: 10, RespSize: 10, Count: 1}, Stack: stack, Credential: cred,
		Common: Common{Count: 1}, Params: map[string]string{"interval": "10ms"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Run(ctx, env); err != nil {
		t.Fatal(err)
	}
	return rec
}

// oneEvent is a client's line that reports one answered message now.
const oneEvent = `now=$(date +%s%N); echo "{\"seq\":0,\"sent_ns\":$now,\"done_ns\":$((now+1000)),\"req_bytes\":10,\"resp_bytes\":10}" > {events}`

// TestCommandsRunAsTheirUser: given a credential (the invoking user under
// sudo), both commands run as that user (id -u prints nobody's 65534),
// write into a directory of their own that user owns ({dir}, where
// {events} is), and the cell's own files stay root's.
func TestCommandsRunAsTheirUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the commands drop from root to another user")
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // nobody must reach its directory
	os.Chmod(dir, 0o755)
	rec := runCommandStack(t, CommandStack{Name: "mine",
		Server: `id -u > {dir}/server-uid; sleep 30`,
		Client: `id -u > {dir}/client-uid; ` + oneEvent},
		&syscall.Credential{Uid: 65534, Gid: 65534}, dir)
	if len(rec.failed) > 0 || len(rec.records) != 1 {
		t.Fatalf("failed %q, %d records", rec.failed, len(rec.records))
	}
	for _, f := range []string{"server-uid", "client-uid"} {
		b, err := os.ReadFile(filepath.Join(dir, CommandsDir, f))
		if got := strings.TrimSpace(string(b)); err != nil || got != "65534" {
			t.Errorf("%s: %q %v, want 65534", f, got, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, CommandsDir)); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("the commands' directory is not the user's: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "client.log")); err != nil || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("client.log is not root's: %v", err)
	}
}

// TestEventsThroughALinkAreRefused: a client that puts a link where its
// events go (to a file only root may read) fails its cell; tlab never
// reads through it, and nothing of the file reaches the cell's error.
func TestEventsThroughALinkAreRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(`{"seq":0,"sent_ns":1,"done_ns":2,"req_bytes":1,"resp_bytes":1} SECRET`), 0o600)
	rec := runCommandStack(t, CommandStack{Name: "mine", Client: `ln -s ` + secret + ` {events}`}, nil, dir)
	if len(rec.failed) != 1 || !strings.Contains(rec.failed[0], "is a link") || strings.Contains(rec.failed[0], "SECRET") {
		t.Errorf("failed %q, want the link refused", rec.failed)
	}
}
