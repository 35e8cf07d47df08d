package domain

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// Leftovers stops every client still running (each closes its connections on SIGTERM), waits
// up to settle for the data plane to be idle again, and lists what is left: every pod's
// interfaces but loopback, its routes and rules; each VPP's interfaces (a pod's own VPP
// included) and each node namespace's links, routes and rules that were not there before the
// first connection. A scenario that passed has none; one that failed shows here what its
// forwarder leaks.
func (d *Domain) Leftovers(ctx context.Context, settle time.Duration) ([]string, error) {
	for _, c := range d.clients {
		if exited, _ := c.Proc.Exited(); !exited {
			_ = c.Close() // a failed Close is what the leftovers show
		}
	}
	for _, c := range d.vppClients {
		if c.Proc != nil {
			_ = c.Close()
		}
	}
	deadline := time.Now().Add(settle)
	for {
		left, err := d.leftovers(ctx)
		if err != nil || len(left) == 0 || time.Now().After(deadline) {
			return left, err
		}
		select {
		case <-ctx.Done():
			return left, ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

func (d *Domain) leftovers(ctx context.Context) ([]string, error) {
	var left []string
	for _, pod := range d.Topology.Pods() {
		state, err := topology.Inspect(pod.Netns)
		if err != nil {
			return nil, err
		}
		left = append(left, podLeftovers("pod "+pod.Name, state)...)
	}
	// The VPPs of the pods that have one (memif clients and endpoints), while they run.
	var podVPPs []*Node
	for _, c := range d.vppClients {
		podVPPs = append(podVPPs, c.node)
	}
	for _, e := range d.vppEndpoints {
		podVPPs = append(podVPPs, e.vpp)
	}
	for _, vpp := range podVPPs {
		if vpp == nil || vpp.VPP == nil {
			continue
		}
		if exited, _ := vpp.VPP.Exited(); exited {
			continue
		}
		interfaces, err := d.VPPInterfaces(ctx, vpp)
		if err != nil {
			return nil, err
		}
		for _, i := range interfaces {
			if !contains(vpp.IdleInterfaces, i) {
				left = append(left, fmt.Sprintf("pod %s VPP: %s interface %s", vpp.Name, i.Kind, i.Name))
			}
		}
	}
	for _, node := range d.Nodes {
		interfaces, err := d.SimulatorInterfaces(ctx, node)
		if err != nil {
			return nil, err
		}
		for _, i := range interfaces {
			if !contains(node.IdleInterfaces, i) {
				left = append(left, fmt.Sprintf("%s VPP: %s interface %s", node.Name, i.Kind, i.Name))
			}
		}
		state, err := topology.Inspect(node.Netns)
		if err != nil {
			return nil, err
		}
		left = append(left, kernelLeftovers(node.Name+" node", state, node.IdleKernel)...)
	}
	return left, nil
}

// podLeftovers lists what a pod holds beyond a fresh namespace's loopback.
func podLeftovers(where string, state *topology.State) []string {
	return kernelLeftovers(where, state, &topology.State{Links: []topology.Link{{Name: "lo", Type: "device", Up: true}}})
}

// loopbackAddr is what the kernel gives lo by itself.
var loopbackAddr = regexp.MustCompile(`^(127\.0\.0\.1/8|::1/128)$`)

// kernelLeftovers lists the links (by name and kind), routes and rules of state that idle does
// not have. A link idle has too is compared by its addresses.
func kernelLeftovers(where string, state, idle *topology.State) []string {
	var left []string
	for _, l := range state.Links {
		was, known := idle.Link(l.Name)
		switch {
		case !known:
			left = append(left, fmt.Sprintf("%s: %s link %s %v", where, l.Type, l.Name, l.Addrs))
		case !sameAddrs(l.Addrs, was.Addrs):
			left = append(left, fmt.Sprintf("%s: addresses of %s %v (idle %v)", where, l.Name, l.Addrs, was.Addrs))
		}
	}
	for _, r := range state.Routes {
		if !contains(idle.Routes, r) {
			left = append(left, fmt.Sprintf("%s: route %+v", where, r))
		}
	}
	for _, r := range state.Rules {
		if !contains(idle.Rules, r) {
			left = append(left, fmt.Sprintf("%s: rule %+v", where, r))
		}
	}
	return left
}

func sameAddrs(now, idle []string) bool {
	var kept []string
	for _, a := range now {
		if !loopbackAddr.MatchString(a) {
			kept = append(kept, a)
		}
	}
	var was []string
	for _, a := range idle {
		if !loopbackAddr.MatchString(a) {
			was = append(was, a)
		}
	}
	return reflect.DeepEqual(kept, was)
}

func contains[T any](list []T, item T) bool {
	for _, x := range list {
		if reflect.DeepEqual(x, item) {
			return true
		}
	}
	return false
}
