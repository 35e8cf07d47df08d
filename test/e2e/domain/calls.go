package domain

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/nsmgrpc"
)

// Call is one Request or Close an nsmgr served or made (Config.CallLogs).
type Call = nsmgrpc.Call

// ReadCalls reads node's call log (Config.CallLogs).
func (n *Node) ReadCalls() ([]Call, error) {
	return readCalls(n.Name, n.CallLog)
}

// ReadCalls reads the endpoint's call log (Config.CallLogs).
func (e *Endpoint) ReadCalls() ([]Call, error) {
	return readCalls(e.Name, e.CallLog)
}

func readCalls(who, path string) ([]Call, error) {
	if path == "" {
		return nil, fmt.Errorf("%s: the domain runs without call logs (Config.CallLogs)", who)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var calls []Call
	reader := bufio.NewReader(f)
	for {
		line, err := reader.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A last line without its newline is a call the program is still writing: the log
			// is read while the programs run.
			return calls, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var c Call
		if err = json.Unmarshal(line, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		calls = append(calls, c)
	}
}

// ForwarderRequests are the Requests the forwarder named forwarder granted, each with the time
// it spent on it alone: the nsmgr's call to the forwarder less the forwarder's nested onward call
// (served by the endpoint, or by an nsmgr toward a remote one), so neither the client's path nor
// the endpoint counts. calls hold the logs of the nsmgr and of the forwarder's next hop. A Request
// the forwarder refused, or that failed further on, is left out.
func ForwarderRequests(calls []Call, forwarder string) []ForwarderRequest {
	// The forwarder's onward calls, by connection.
	onward := map[string][]Call{}
	for _, c := range calls {
		if !c.Out && c.Method == "Request" && c.Peer == forwarder {
			onward[c.Key] = append(onward[c.Key], c)
		}
	}
	var granted []ForwarderRequest
	for _, c := range calls {
		if !c.Out || c.Method != "Request" || c.Peer != forwarder || !c.OK {
			continue
		}
		for _, in := range onward[c.Key] {
			if in.OK && !in.Start.Before(c.Start) && !in.End.After(c.End) {
				granted = append(granted, ForwarderRequest{Key: c.Key, Start: c.Start, End: c.End,
					Forwarder:     c.End.Sub(c.Start) - in.End.Sub(in.Start),
					BeforeNextHop: in.Start.Sub(c.Start), AfterNextHop: c.End.Sub(in.End)})
				break
			}
		}
	}
	sort.Slice(granted, func(i, j int) bool { return granted[i].Start.Before(granted[j].Start) })
	return granted
}

// ForwarderRequest is one Request the forwarder granted.
type ForwarderRequest struct {
	Key        string
	Start, End time.Time
	// Forwarder is the time the forwarder spent on it alone: BeforeNextHop, until its onward
	// call began, and AfterNextHop, from the next hop's answer to its own.
	Forwarder, BeforeNextHop, AfterNextHop time.Duration
}

// ClientGrants are, per client connection (its own ID), when the nsmgr granted its Requests to
// the client, in order.
func ClientGrants(calls []Call, clientPrefix string) map[string][]time.Time {
	grants := map[string][]time.Time{}
	for _, c := range calls {
		if !c.Out && c.Method == "Request" && c.OK && len(c.Peer) >= len(clientPrefix) && c.Peer[:len(clientPrefix)] == clientPrefix {
			grants[c.Key] = append(grants[c.Key], c.End)
		}
	}
	for _, g := range grants {
		sort.Slice(g, func(i, j int) bool { return g[i].Before(g[j]) })
	}
	return grants
}
