package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"tlab/internal/testbed"
)

// usernsEnv marks a tlab that was re-executed inside a user namespace.
const usernsEnv = "TLAB_IN_USERNS"

// ensurePrivileges returns (0, false) when this process may build
// testbeds. Otherwise, when the kernel lets unprivileged users create user
// namespaces, it runs the same command again inside one that maps the user
// to root, and returns that command's exit code with true. When neither
// works it prints what to do and returns exitError.
func ensurePrivileges(args []string, stderr io.Writer) (int, bool) {
	err := testbed.CheckPrivileges()
	if err == nil {
		return 0, false
	}
	if os.Getenv(usernsEnv) != "" {
		fmt.Fprintf(stderr, "tlab: %v\n", err)
		return exitError, true
	}
	code, rerr := reexecInUserNamespace(args)
	if rerr == nil {
		return code, true
	}
	fmt.Fprintf(stderr, "tlab: %v\n  (a user namespace was tried too: %v)\n", err, rerr)
	return exitError, true
}

func reexecInUserNamespace(args []string) (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), usernsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A network namespace of its own, owned by the new user
		// namespace: veths are created from there.
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		// Nothing may outlive tlab: when this process dies, even by
		// SIGKILL, the kernel kills the child (whose own children, the
		// emulators, die with it in turn).
		Pdeathsig: syscall.SIGKILL,
	}
	// Pdeathsig fires when the thread that started the child exits: keep
	// it on one thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot create a user namespace: %w", err)
	}
	// Ctrl-C reaches the child through the terminal; pass SIGTERM on.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, nil
}
