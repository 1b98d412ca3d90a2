//go:build linux

package emupath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Env is the environment a command run over the path gets: the
// process's own plus the ends' addresses and namespaces
// (LONGHAUL_SERVER, LONGHAUL_CLIENT, their _NETNS, and with IPv6
// LONGHAUL_SERVER6 and LONGHAUL_CLIENT6).
func (p *Path) Env() []string {
	cl, sv := p.Topo.Client(), p.Topo.Server()
	env := append(os.Environ(), "LONGHAUL_SERVER="+sv.Addr.String(), "LONGHAUL_CLIENT="+cl.Addr.String(),
		"LONGHAUL_CLIENT_NETNS="+cl.Netns, "LONGHAUL_SERVER_NETNS="+sv.Netns)
	if sv.Addr6.IsValid() {
		env = append(env, "LONGHAUL_SERVER6="+sv.Addr6.String(), "LONGHAUL_CLIENT6="+cl.Addr6.String())
	}
	return env
}

// StartServer runs shell command line in the server's namespace and
// waits (up to 10 s) until it listens on a port; stop ends it.
//
// The line runs as the first process of a PID namespace of its own: when
// it dies, the kernel kills everything it started. Its parent death
// signal kills it when this process is SIGKILLed, so a daemon the line
// forked (sh -c 'server & wait') does not outlive the run waiting for the
// next one to reap its network namespace.
func (p *Path) StartServer(ctx context.Context, line string, env []string, log io.Writer) (stop func(), err error) {
	sv := p.Topo.Server()
	srv := sv.Command(ctx, "sh", "-c", line)
	srv.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	srv.Env, srv.Stdout, srv.Stderr = env, log, log
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("emulate: start --server: %w", err)
	}
	stop = func() { _ = srv.Cancel(); _ = srv.Wait() }
	if err := WaitListening(ctx, srv, sv.Netns, 0, "emulate: --server command", 10*time.Second); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// RunClient runs argv in the client's namespace on this process's
// standard input and output and returns its exit status (128 + the
// signal's number when a signal ended it, as a shell reports it). When
// standard input is a terminal (tty) the command becomes the foreground
// process group, so that an interactive shell gets the terminal's
// signals, and the terminal is taken back when it ends; otherwise ctx's
// end is passed on as SIGTERM, then SIGKILL 5 s later.
func (p *Path) RunClient(ctx context.Context, argv []string, env []string, tty bool) (int, error) {
	cmd := p.Topo.Client().Command(context.Background(), argv[0], argv[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, os.Stdin, os.Stdout, os.Stderr
	if tty {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = 0
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("emulate: start %s: %w", argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// Ask politely, then insist.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
	}
	if tty {
		reclaimTerminal()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

// reclaimTerminal makes this process's group the foreground again.
func reclaimTerminal() {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(int(os.Stdin.Fd()), unix.TIOCSPGRP, unix.Getpgrp())
}
