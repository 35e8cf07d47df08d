package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Spec says what to run and where.
type Spec struct {
	// Name identifies the process in errors and log headers, e.g. "nsmgr-node1".
	Name string
	// Netns, when set, is the name of the network namespace (as `ip netns`
	// knows it) to run in; `ip netns exec` execs the binary in place, so the
	// process keeps the binary's own path, which SPIRE's path selector needs.
	Netns  string
	Binary string
	Args   []string
	// Env is added to the harness's own environment.
	Env     []string
	LogPath string
	// TermLeaderOnly makes Stop send SIGTERM to the program alone, not to its process group, as
	// the kubelet signals a container's first process: a program that started children (the
	// forwarder its own VPP) stops them itself. Kill still ends the whole group.
	TermLeaderOnly bool
}

// Process is a started program.
type Process struct {
	spec    Spec
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	waitErr error
	once    sync.Once
	// killed is set by Kill: a death by the harness's own SIGKILL is the
	// point of a crash scenario, not a failed shutdown.
	killed atomic.Bool
}

// Start launches spec and returns at once; use the program's own readiness
// signal (a socket, a file) to know when it is serving.
func Start(spec Spec) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(spec.LogPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	argv := append([]string{spec.Binary}, spec.Args...)
	if spec.Netns != "" {
		argv = append([]string{"ip", "netns", "exec", spec.Netns}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Process{spec: spec, cmd: cmd, logFile: logFile, done: make(chan struct{})}
	// Pdeathsig follows the thread that forked the program, not the harness process: the fork
	// and the wait run on one goroutine locked to its thread, which therefore lives as long as
	// the program (Go throws a thread away when a goroutine that entered a namespace ends
	// locked to it, and the program would be SIGKILLed then).
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			_ = logFile.Close()
			started <- fmt.Errorf("start %s: %w", spec.Name, err)
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Run runs spec's binary with args to its end, in spec's namespace and environment, and returns
// its standard output: a one-shot command beside a long-running program, as `kubectl exec` runs
// one in a pod.
func Run(ctx context.Context, spec Spec, args ...string) ([]byte, error) {
	argv := append([]string{spec.Binary}, args...)
	if spec.Netns != "" {
		argv = append([]string{"ip", "netns", "exec", spec.Netns}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %v: %w: %s", spec.Name, args, err, stderr.String())
	}
	return out, nil
}

// Spec is what the process was started with.
func (p *Process) Spec() Spec { return p.spec }

// Name is the spec's name.
func (p *Process) Name() string { return p.spec.Name }

// Pid is the process ID (`ip netns exec` execs in place: the program's own).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogPath is where its output goes.
func (p *Process) LogPath() string { return p.spec.LogPath }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group and waits up to grace for a clean
// exit, then kills it. It returns the exit error of a process that did not
// end cleanly (a graceful-shutdown failure is a finding, not noise).
func (p *Process) Stop(grace time.Duration) error {
	p.once.Do(func() {
		target := -p.cmd.Process.Pid
		if p.spec.TermLeaderOnly {
			target = p.cmd.Process.Pid
		}
		_ = syscall.Kill(target, syscall.SIGTERM)
	})
	select {
	case <-p.done:
		return p.exitError()
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not exit within %s of SIGTERM and was killed", p.spec.Name, grace)
	}
}

// Kill ends the process group at once, as an OOM kill would; a later Stop
// then reports no error, also when the process had already exited with one.
func (p *Process) Kill() {
	p.killed.Store(true)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Signal sends sig to the program itself (not its process group).
func (p *Process) Signal(sig syscall.Signal) error {
	if exited, _ := p.Exited(); exited {
		return fmt.Errorf("%s has exited", p.spec.Name)
	}
	return syscall.Kill(p.cmd.Process.Pid, sig)
}

// Respawn starts the same program again with the same spec, as a kubelet
// restarts a crashed container; its output is appended to the same log,
// after a line that marks the restart. Call it once p has exited.
func (p *Process) Respawn() (*Process, error) {
	if exited, _ := p.Exited(); !exited {
		return nil, fmt.Errorf("%s is still running", p.spec.Name)
	}
	logFile, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(logFile, "==== e2e harness: %s restarted at %s ====\n", p.spec.Name, time.Now().UTC().Format(time.RFC3339Nano))
	err = errors.Join(err, logFile.Close())
	if err != nil {
		return nil, err
	}
	return Start(p.spec)
}

func (p *Process) exitError() error {
	if p.waitErr == nil || p.killed.Load() {
		// After Kill the exit is the caller's: it ended the process, or took its failed exit
		// and disowned it (the crash campaign's client whose Close failed).
		return nil
	}
	var exitErr *exec.ExitError
	if errors.As(p.waitErr, &exitErr) {
		// Programs that do not trap SIGTERM (the SPIRE binaries) end this way.
		if status, ok := exitErr.Sys().(syscall.WaitStatus); ok && status.Signaled() && status.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return fmt.Errorf("%s: %w", p.spec.Name, p.waitErr)
}

// LogTail returns the last lines of the process's output.
func (p *Process) LogTail(lines int) string {
	return Tail(p.spec.LogPath, lines)
}

// Tail returns the last lines of a file, or a note saying why it cannot.
func Tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	data = bytes.TrimRight(data, "\n")
	all := strings.Split(string(data), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
