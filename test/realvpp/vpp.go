package realvpp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"go.fd.io/govpp"
	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
)

// prefixBase starts the prefix, runtime directory and namespace of every VPP Start runs; the
// test process's pid follows, so that runs of several helpers never collide and a dead run's
// leftovers are recognised (SweepStale).
const prefixBase = "fwdvpp-"

var started atomic.Int64

const (
	// readyTimeout bounds start-up: VPP answers within about a second, much later on a machine
	// busy compiling.
	readyTimeout = 30 * time.Second
	stopGrace    = 10 * time.Second
	// ClockAttempts bounds how often Start runs VPP to get one whose clock is right; a stall
	// right at VPP's clock estimate is rare, so a second start nearly always does.
	ClockAttempts = 3
)

// Options say what to run and where.
type Options struct {
	// Binary is the vpp to run; empty means Find.
	Binary string
	// Netns is an existing network namespace (as ip netns names it) to run in. Empty gives VPP a
	// namespace of its own, deleted by Stop, unless InCallerNetns is set.
	Netns string
	// InCallerNetns runs VPP in the caller's namespace, as VPP shares the forwarder's pod: the
	// veth kernel mechanism leaves the forwarder's end of each pair there for VPP to bind.
	InCallerNetns bool
	// KeepMisclocked runs VPP once and returns it even when it misread its clock at start-up
	// (Misclocked says so), for tests of what a client of such a VPP sees. Stop kills it at once:
	// it ignores SIGTERM.
	KeepMisclocked bool
}

// VPP is a running VPP.
type VPP struct {
	Layout
	// Netns is the namespace VPP runs in; empty when it shares the caller's.
	Netns    string
	ownNetns bool
	cmd      *exec.Cmd
	output   string
	done     chan struct{}
	waitErr  error
	// Discarded says why Start threw away earlier runs of this VPP (see vppclock).
	Discarded []error
	// Misclocked says why Start would have run this VPP again had Options.KeepMisclocked not kept
	// it (a vppclock.Misstart); nil when its clock keeps the kernel's pace.
	Misclocked error
}

// Start runs VPP with a fresh layout and returns once its API answers with a clock that keeps
// the kernel's pace. A VPP that misread its clock at start-up (vppclock) is killed, swept and
// started again, up to ClockAttempts times in all; Discarded says why. With KeepMisclocked it is
// kept instead, and Misclocked says why it would have been started again.
func Start(ctx context.Context, o Options) (*VPP, error) {
	if o.Binary == "" {
		binary, err := Find()
		if err != nil {
			return nil, err
		}
		o.Binary = binary
	}
	var discarded []error
	for {
		v, err := startOnce(ctx, o)
		if o.KeepMisclocked || !vppclock.Misstarted(err) || len(discarded)+1 == ClockAttempts {
			if v != nil {
				v.Discarded = discarded
			}
			return v, err
		}
		discarded = append(discarded, err)
	}
}

func startOnce(ctx context.Context, o Options) (v *VPP, err error) {
	layout, err := NewLayout("", strconv.FormatInt(started.Add(1), 10))
	if err != nil {
		return nil, err
	}
	if layout.Dir, err = os.MkdirTemp("", layout.Prefix+"-"); err != nil {
		return nil, err
	}
	v = &VPP{Layout: layout, Netns: o.Netns, output: filepath.Join(layout.Dir, "vpp.out"), done: make(chan struct{})}
	defer func() {
		if err != nil {
			// A VPP that failed to start is of no use ended gracefully; one with a misread clock
			// ignores SIGTERM.
			v.signal(syscall.SIGKILL)
			err = errors.Join(err, v.Stop())
			v = nil
		}
	}()
	if err = v.WriteConfig(); err != nil {
		return v, err
	}
	if v.Netns == "" && !o.InCallerNetns {
		v.Netns, v.ownNetns = layout.Prefix, true
		if out, addErr := exec.Command("ip", "netns", "add", v.Netns).CombinedOutput(); addErr != nil {
			v.ownNetns = false
			return v, fmt.Errorf("ip netns add %s: %w: %s", v.Netns, addErr, out)
		}
		if out, upErr := exec.Command("ip", "-n", v.Netns, "link", "set", "lo", "up").CombinedOutput(); upErr != nil {
			return v, fmt.Errorf("lo up in %s: %w: %s", v.Netns, upErr, out)
		}
	}
	if err = v.launch(o.Binary); err != nil {
		return v, err
	}
	if err = v.waitReady(ctx); o.KeepMisclocked && vppclock.Misstarted(err) {
		v.Misclocked, err = err, Unpin(v.Pid())
	}
	return v, err
}

func (v *VPP) launch(binary string) error {
	output, err := os.Create(v.output)
	if err != nil {
		return err
	}
	argv := []string{binary, "-c", v.ConfigPath()}
	if v.Netns != "" {
		argv = append([]string{"ip", "netns", "exec", v.Netns}, argv...)
	}
	v.cmd = exec.Command(argv[0], argv[1:]...)
	v.cmd.Stdout, v.cmd.Stderr = output, output
	// VPP dies with the test process, however that ends. Pdeathsig follows the thread that
	// forked VPP, not the process: that thread must live as long as VPP, so the fork and the
	// wait run on one goroutine locked to it (a Go thread is thrown away when a goroutine that
	// entered a namespace ends locked to it, and VPP would be SIGKILLed then).
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(v.done)
		defer func() { _ = output.Close() }()
		if err := v.cmd.Start(); err != nil {
			started <- fmt.Errorf("starting %s: %w", binary, err)
			return
		}
		started <- nil
		v.waitErr = v.cmd.Wait()
	}()
	return <-started
}

func (v *VPP) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		if _, statErr := os.Stat(v.APISocket()); statErr == nil {
			if conn, err := govpp.Connect(v.APISocket()); err == nil {
				defer conn.Disconnect()
				if err = vppclock.CheckStarted(ctx, conn); err != nil {
					return fmt.Errorf("vpp %s: %w", v.Prefix, err)
				}
				return Unpin(v.cmd.Process.Pid)
			}
		}
		select {
		case <-v.done:
			return fmt.Errorf("vpp exited during start-up (%v):\n%s", v.waitErr, v.OutputTail(20))
		case <-ctx.Done():
			return fmt.Errorf("vpp did not answer on %s within %s:\n%s", v.APISocket(), readyTimeout, v.OutputTail(20))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Pid is VPP's process ID.
func (v *VPP) Pid() int { return v.cmd.Process.Pid }

// State says whether VPP still runs, or how it ended.
func (v *VPP) State() string {
	select {
	case <-v.done:
		return fmt.Sprintf("ended: %v", v.waitErr)
	default:
		return "running"
	}
}

// Exited is closed once VPP has ended.
func (v *VPP) Exited() <-chan struct{} { return v.done }

// Kill ends VPP with SIGKILL, as a crash does: its sockets and shared-memory segments stay until
// Stop sweeps them.
func (v *VPP) Kill() {
	v.signal(syscall.SIGKILL)
	<-v.done
}

// Stop ends VPP (SIGTERM, SIGKILL after a grace period), removes its sockets, shared-memory
// segments, runtime directory and own namespace, and reports anything it could not remove.
// It may be called more than once.
func (v *VPP) Stop() error {
	var errs []error
	if v.Misclocked != nil {
		v.signal(syscall.SIGKILL)
	}
	if v.cmd != nil && v.cmd.Process != nil {
		v.signal(syscall.SIGTERM)
		select {
		case <-v.done:
		case <-time.After(stopGrace):
			v.signal(syscall.SIGKILL)
			<-v.done
			errs = append(errs, fmt.Errorf("vpp did not exit within %s of SIGTERM and was killed", stopGrace))
		}
	}
	errs = append(errs, v.Sweep())
	if leftovers, err := v.Leftovers(); err != nil || len(leftovers) > 0 {
		errs = append(errs, fmt.Errorf("left behind after stopping vpp: %v %v", leftovers, err))
	}
	if v.ownNetns {
		errs = append(errs, deleteNetns(v.Netns))
		v.ownNetns = false
	}
	errs = append(errs, os.RemoveAll(v.Dir))
	return errors.Join(errs...)
}

func (v *VPP) signal(sig syscall.Signal) {
	if v.cmd == nil || v.cmd.Process == nil {
		return
	}
	select {
	case <-v.done:
	default:
		_ = syscall.Kill(-v.cmd.Process.Pid, sig)
	}
}

// OutputTail is the end of VPP's stdout and stderr, then of its own log.
func (v *VPP) OutputTail(lines int) string {
	return tail(v.output, lines) + "\n" + tail(v.LogPath(), lines)
}

func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	all := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}

// Unpin lets every thread of pid run on any CPU the caller may use. VPP pins its main thread to
// one core (core 1 when it exists); on a machine shared by many VPPs and builds they would all
// queue on that one core.
func Unpin(pid int) error {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return err
	}
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return err
	}
	for _, task := range tasks {
		tid, convErr := strconv.Atoi(task.Name())
		if convErr != nil {
			continue
		}
		if err = unix.SchedSetaffinity(tid, &allowed); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("unpinning thread %d of vpp %d: %w", tid, pid, err)
		}
	}
	return nil
}

func deleteNetns(name string) error {
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %w: %s", name, err, out)
	}
	return nil
}
