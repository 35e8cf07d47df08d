package topology

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Ping is a ping running in a namespace until it is stopped: the data path measured across a
// crash.
type Ping struct {
	cmd      *exec.Cmd
	interval time.Duration
	mu       sync.Mutex
	out      bytes.Buffer
	done     chan error
	stopOnce sync.Once
	result   PingResult
	err      error
}

// PingResult is what a stopped ping saw.
type PingResult struct {
	Sent, Received int
	// LongestOutage is the longest run of consecutive unanswered requests, times the interval.
	LongestOutage time.Duration
}

// Lost is how many requests went unanswered.
func (r PingResult) Lost() int { return r.Sent - r.Received }

func (r PingResult) String() string {
	return fmt.Sprintf("%d of %d lost, longest outage %s", r.Lost(), r.Sent, r.LongestOutage)
}

// StartPing pings dst from the named namespace through ifname every interval (20 per second
// needs 50ms, which only root may ask for), each reply awaited up to a second.
func StartPing(netns, ifname, dst string, interval time.Duration) (*Ping, error) {
	p := &Ping{interval: interval, done: make(chan error, 1)}
	p.cmd = exec.Command("ip", "netns", "exec", netns, "ping", "-n", "-W", "1",
		"-i", strconv.FormatFloat(interval.Seconds(), 'f', 3, 64), "-I", ifname, dst)
	p.cmd.Stdout, p.cmd.Stderr = &lockedWriter{p}, &lockedWriter{p}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("ping in %s: %w", netns, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p, nil
}

type lockedWriter struct{ p *Ping }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.out.Write(b)
}

var (
	replyLine   = regexp.MustCompile(`icmp_seq=(\d+) `)
	summaryLine = regexp.MustCompile(`(\d+) packets transmitted, (\d+) (?:packets )?received`)
)

// Stop interrupts the ping, which then prints its summary, and returns what it saw. Later calls
// return the same.
func (p *Ping) Stop() (PingResult, error) {
	p.stopOnce.Do(func() { p.result, p.err = p.stop() })
	return p.result, p.err
}

func (p *Ping) stop() (PingResult, error) {
	// ip netns exec execs ping in place: the signal reaches ping itself.
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.mu.Lock()
	out := p.out.String()
	p.mu.Unlock()
	summary := summaryLine.FindStringSubmatch(out)
	if summary == nil {
		return PingResult{}, fmt.Errorf("ping printed no summary:\n%s", out)
	}
	var result PingResult
	result.Sent, _ = strconv.Atoi(summary[1])
	result.Received, _ = strconv.Atoi(summary[2])
	// Replies come with their sequence numbers (1, 2, ...): a gap between two is an outage, and so
	// is whatever went unanswered before the first and after the last.
	previous := 0
	longest := 0
	for _, match := range replyLine.FindAllStringSubmatch(out, -1) {
		seq, _ := strconv.Atoi(match[1])
		if seq <= previous {
			continue // a duplicate or late reply
		}
		longest = max(longest, seq-previous-1)
		previous = seq
	}
	longest = max(longest, result.Sent-previous)
	result.LongestOutage = time.Duration(longest) * p.interval
	return result, nil
}
