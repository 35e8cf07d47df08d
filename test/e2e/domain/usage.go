package domain

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netns"
)

// pprofAddress is where a forwarder run with PprofEnv serves pprof, in its node's namespace.
const pprofAddress = "localhost:6060"

// PprofEnv makes a forwarder serve pprof (both forwarders read the stock NSM_PPROF_* variables),
// which ForwarderUsage needs for the goroutine count.
func PprofEnv() []string {
	return []string{"NSM_PPROF_ENABLED=true", "NSM_PPROF_LISTEN_ON=" + pprofAddress}
}

// Usage is what a forwarder process holds at one moment.
type Usage struct {
	// RSS is its resident memory (VmRSS), in bytes.
	RSS         int64
	Goroutines  int
	Descriptors int
	// CPU is the processor time it has used since it started, user and system together.
	CPU time.Duration
}

// ForwarderUsage reads node's forwarder's resident memory and open descriptors from /proc and
// its goroutines from its pprof server (PprofEnv).
func (d *Domain) ForwarderUsage(ctx context.Context, node *Node) (Usage, error) {
	pid := node.Forwarder.Pid()
	var u Usage
	var err error
	if u.Goroutines, err = goroutines(ctx, node.Netns); err != nil {
		return u, fmt.Errorf("%s: %w", node.ForwarderName, err)
	}
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return u, err
	}
	u.Descriptors = len(entries)
	if u.CPU, err = cpuTime(pid); err != nil {
		return u, err
	}
	u.RSS, err = residentBytes(pid)
	return u, err
}

// clockTicksPerSecond is the unit of /proc/<pid>/stat's times (USER_HZ), 100 on every Linux
// architecture Go supports.
const clockTicksPerSecond = 100

// cpuTime is pid's utime + stime, fields 14 and 15 of /proc/<pid>/stat, counted after the
// command name's closing parenthesis because the name may hold spaces.
func cpuTime(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	nameEnd := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[nameEnd+1:]))
	if nameEnd < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q has no utime and stime", pid, stat)
	}
	var ticks int64
	for _, field := range fields[11:13] {
		n, parseErr := strconv.ParseInt(field, 10, 64)
		if parseErr != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, parseErr)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSecond, nil
}

// Recording is what the forwarder's pprof server records over a time: a CPU profile (for `go tool
// pprof`) or an execution trace (for `go tool trace`).
type Recording string

const (
	CPUProfile     Recording = "profile"
	ExecutionTrace Recording = "trace"
)

// RecordForwarder records node's forwarder's recording for the given time from its pprof server
// (PprofEnv) and writes it to path.
func (d *Domain) RecordForwarder(ctx context.Context, node *Node, recording Recording, duration time.Duration, path string) error {
	resp, err := pprofGet(ctx, node.Netns, fmt.Sprintf("/debug/pprof/%s?seconds=%d", recording, int(duration.Seconds())))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	profile, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, profile, 0o600)
}

func residentBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if rest, found := strings.CutPrefix(scanner.Text(), "VmRSS:"); found {
			fields := strings.Fields(rest)
			kb, parseErr := strconv.ParseInt(fields[0], 10, 64)
			return kb * 1024, parseErr
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// goroutines asks the pprof server in netnsName for its goroutine count, on a connection of its
// own so that nothing of the harness stays open in the forwarder between two counts.
func goroutines(ctx context.Context, netnsName string) (int, error) {
	resp, err := pprofGet(ctx, netnsName, "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	head, err := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("pprof goroutine profile: %w", err)
	}
	total, found := strings.CutPrefix(strings.TrimSpace(head), "goroutine profile: total ")
	if !found {
		return 0, fmt.Errorf("pprof goroutine profile starts with %q", head)
	}
	return strconv.Atoi(total)
}

// pprofGet asks the pprof server in netnsName for path, on a connection of its own, and fails
// unless the answer is 200 OK.
func pprofGet(ctx context.Context, netnsName, path string) (*http.Response, error) {
	client := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialIn(ctx, netnsName, network, addr)
		},
	}}
	url := "http://" + pprofAddress + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return resp, nil
}

// dialIn dials from the network namespace netnsName: the socket belongs to the namespace it is
// made in, whichever thread uses it later.
func dialIn(ctx context.Context, netnsName, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	origin, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer func() { _ = origin.Close() }()
	target, err := netns.GetFromName(netnsName)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer func() { _ = target.Close() }()
	if err = netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	conn, dialErr := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err = netns.Set(origin); err == nil {
		// A thread left in another namespace stays locked, and Go ends it with its goroutine.
		runtime.UnlockOSThread()
	}
	return conn, dialErr
}
