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

// replyWait is how long ping awaits each reply (its -W): a request is lost once it has waited
// this long unanswered.
const replyWait = time.Second

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
	// Unanswered are the sequence numbers of the requests that went unanswered.
	Unanswered []int
	// LongestOutage is the longest run of consecutive unanswered requests, times the interval.
	LongestOutage time.Duration
}

// Lost is how many requests went unanswered.
func (r PingResult) Lost() int { return r.Sent - r.Received }

func (r PingResult) String() string {
	s := fmt.Sprintf("%d of %d lost", r.Lost(), r.Sent)
	if len(r.Unanswered) > 0 {
		s += fmt.Sprintf(" (icmp_seq %v)", r.Unanswered)
	}
	return s + fmt.Sprintf(", longest outage %s", r.LongestOutage)
}

// StartPing pings dst from the named namespace through ifname every interval (20 per second
// needs 50ms, which only root may ask for), each reply awaited up to replyWait.
func StartPing(netns, ifname, dst string, interval time.Duration) (*Ping, error) {
	p := &Ping{interval: interval, done: make(chan error, 1)}
	p.cmd = exec.Command("ip", "netns", "exec", netns, "ping", "-n", "-W", strconv.Itoa(int(replyWait.Seconds())),
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
	replyLine = regexp.MustCompile(`icmp_seq=(\d+) `)
	// What iputils ping prints to stderr on SIGQUIT: received/transmitted so far.
	statusLine = regexp.MustCompile(`(\d+)/(\d+) packets, `)
)

// Stop ends the ping and returns what it saw of the requests it had sent when Stop was called.
// Later calls return the same.
//
// ping, interrupted, counts the request it sent last as unanswered even when its reply is still
// on the way, which made a healthy data path look like it lost one packet now and then. So Stop
// first asks ping how many it has sent (SIGQUIT), lets those requests have their whole reply
// wait, and only then interrupts it; requests sent after that are not counted.
func (p *Ping) Stop() (PingResult, error) {
	p.stopOnce.Do(func() { p.result, p.err = p.stop() })
	return p.result, p.err
}

func (p *Ping) stop() (PingResult, error) {
	defer p.interrupt()
	sent, err := p.sentSoFar()
	if err != nil {
		return PingResult{}, err
	}
	deadline := time.Now().Add(replyWait + p.interval)
	for len(p.unanswered(sent)) > 0 && time.Now().Before(deadline) {
		time.Sleep(p.interval)
	}
	unanswered := p.unanswered(sent)
	return PingResult{
		Sent:          sent,
		Received:      sent - len(unanswered),
		Unanswered:    unanswered,
		LongestOutage: time.Duration(longestRun(unanswered)) * p.interval,
	}, nil
}

// longestRun is the length of the longest run of consecutive numbers in ascending seqs.
func longestRun(seqs []int) int {
	longest, run := 0, 0
	for i, seq := range seqs {
		if i > 0 && seq == seqs[i-1]+1 {
			run++
		} else {
			run = 1
		}
		longest = max(longest, run)
	}
	return longest
}

// sentSoFar has ping print its status line and reads how many requests it has sent.
func (p *Ping) sentSoFar() (int, error) {
	before := len(statusLine.FindAllString(p.output(), -1))
	// ip netns exec execs ping in place: the signal reaches ping itself.
	if err := p.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return 0, fmt.Errorf("ping ended before it was stopped:\n%s", p.output())
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		statuses := statusLine.FindAllStringSubmatch(p.output(), -1)
		if len(statuses) > before {
			return strconv.Atoi(statuses[len(statuses)-1][2])
		}
	}
	return 0, fmt.Errorf("ping printed no status on SIGQUIT:\n%s", p.output())
}

// unanswered are the sequence numbers up to sent that no reply has named yet.
func (p *Ping) unanswered(sent int) []int {
	answered := map[int]bool{}
	for _, match := range replyLine.FindAllStringSubmatch(p.output(), -1) {
		seq, _ := strconv.Atoi(match[1])
		answered[seq] = true
	}
	var missing []int
	for seq := 1; seq <= sent; seq++ {
		if !answered[seq] {
			missing = append(missing, seq)
		}
	}
	return missing
}

func (p *Ping) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *Ping) interrupt() {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
