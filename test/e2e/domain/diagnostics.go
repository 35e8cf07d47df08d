package domain

import (
	"context"
	"fmt"
	"strings"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// Diagnostics renders what a person needs to understand a failed scenario:
// the forwarders' (and other programs') log tails, the kernel state of every
// namespace and each node's VPP.
func (d *Domain) Diagnostics() string {
	var b strings.Builder
	b.WriteString("==== e2e diagnostics ====\n")
	for _, n := range d.Nodes {
		for _, p := range []*process.Process{n.Forwarder, n.Nsmgr, n.VPP} {
			writeTail(&b, p, logTailLength)
		}
	}
	for _, n := range d.extraForwarders {
		for _, p := range []*process.Process{n.Forwarder, n.VPP} {
			writeTail(&b, p, logTailLength)
		}
	}
	for _, e := range d.endpoints {
		writeTail(&b, e.Proc, logTailLength/2)
	}
	for _, e := range d.vppEndpoints {
		writeTail(&b, e.VPP, logTailLength/4)
	}
	for _, e := range d.vlanEndpoints {
		writeTail(&b, e.Proc, logTailLength/2)
	}
	for _, host := range d.vlanHosts {
		writeTail(&b, host, logTailLength/4)
	}
	for _, c := range d.vppClients {
		writeTail(&b, c.Proc, logTailLength/2)
		writeTail(&b, c.VPP, logTailLength/4)
	}
	for _, c := range d.clients {
		writeTail(&b, c.Proc, logTailLength/2)
	}
	writeTail(&b, d.Registry, logTailLength/4)
	if d.SPIRE != nil {
		for _, p := range d.SPIRE.Processes() {
			writeTail(&b, p, logTailLength/4)
		}
	}
	if d.Topology != nil {
		for _, n := range d.Topology.Nodes {
			writeNetns(&b, "node "+n.Name, n.Netns)
		}
		for _, pod := range d.Topology.Pods() {
			writeNetns(&b, "pod "+pod.Name, pod.Netns)
		}
		if d.Trunk != nil {
			writeNetns(&b, "host on the trunk", d.Trunk.HostNetns)
		}
	}
	for _, n := range d.Nodes {
		if n.VPP == nil {
			continue
		}
		state, err := d.VPPState(context.Background(), n)
		if err != nil {
			state += err.Error()
		}
		fmt.Fprintf(&b, "---- %s of %s ----\n%s\n", d.VPPName(), n.Name, strings.TrimRight(state, "\n"))
	}
	return b.String()
}

func writeTail(b *strings.Builder, p *process.Process, lines int) {
	if p == nil {
		return
	}
	state := "running"
	if exited, err := p.Exited(); exited {
		state = fmt.Sprintf("exited: %v", err)
	}
	fmt.Fprintf(b, "---- %s (%s), last %d lines of %s ----\n%s\n", p.Name(), state, lines, p.LogPath(), p.LogTail(lines))
}

func writeNetns(b *strings.Builder, title, netns string) {
	state, err := topology.Inspect(netns)
	if err != nil {
		fmt.Fprintf(b, "---- %s (%s): %v\n", title, netns, err)
		return
	}
	fmt.Fprintf(b, "---- %s (%s) ----\n%s", title, netns, state)
}
