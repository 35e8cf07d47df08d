package main

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

const (
	service = "icmp-responder"
	cidr    = "172.16.100.0/24"
)

// connectAndPing starts the endpoint on the last node, then a client on the
// same node and one on the first node, and pings through each.
func connectAndPing(ctx context.Context, d *domain.Domain, out *report) error {
	endpointNode := d.Nodes[len(d.Nodes)-1]
	start := time.Now()
	nse, err := d.StartEndpoint(ctx, endpointNode, "nse", service, cidr)
	if err != nil {
		return err
	}
	out.timing(fmt.Sprintf("endpoint %q registered on %s", service, endpointNode.Name), time.Since(start))

	clients := []struct {
		name string
		node *domain.Node
		path string
	}{
		{"nsc-local", endpointNode, "kernel -> " + endpointNode.Name + " forwarder -> kernel"},
		{"nsc-remote", d.Nodes[0], fmt.Sprintf("kernel -> %s forwarder -> VXLAN %s->%s -> %s forwarder -> kernel",
			d.Nodes[0].Name, d.Nodes[0].IP.Addr(), endpointNode.IP.Addr(), endpointNode.Name)},
	}
	for _, c := range clients {
		start = time.Now()
		client, connErr := d.Connect(ctx, c.node, c.name, fmt.Sprintf("kernel://%s/nsm-1", service))
		if connErr != nil {
			return connErr
		}
		elapsed := time.Since(start)
		out.section(fmt.Sprintf("%s on %s: %s", c.name, c.node.Name, c.path))
		out.timing("Request granted", elapsed)
		conn := client.Connections[0]
		ipc := conn.GetContext().GetIpContext()
		ifname := conn.GetMechanism().GetParameters()[common.InterfaceNameKey]
		out.kernel("client pod "+client.Pod.Netns, client.Pod.Netns)
		out.kernel("endpoint pod "+nse.Pod.Netns, nse.Pod.Netns)
		for _, node := range d.Nodes {
			out.simulator(ctx, d, node)
		}
		for _, dst := range ipc.GetDstIpAddrs() {
			addr := netip.MustParsePrefix(dst).Addr().String()
			received, pingErr := out.ping(ctx, client.Pod.Netns, ifname, addr)
			if pingErr != nil {
				return pingErr
			}
			out.pings = append(out.pings, fmt.Sprintf("%s to %s: %s", c.name, addr, received))
		}
		start = time.Now()
		if err = client.Close(); err != nil {
			return fmt.Errorf("%s: Close failed: %w", c.name, err)
		}
		out.timing("Close", time.Since(start))
		if err = client.DeletePod(); err != nil {
			return err
		}
	}
	return nil
}

// ping runs the system ping from a pod, prints its summary lines and
// returns its packet count line.
func (r *report) ping(ctx context.Context, netns, ifname, dst string) (string, error) {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", netns, "ping", "-c", "3", "-i", "0.2", "-W", "2", "-I", ifname, dst)
	output, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(output)), "\n")
	summary := lines
	if len(lines) > 2 {
		summary = lines[len(lines)-2:]
	}
	fmt.Fprintf(r.w, "  ping %s from the client pod:\n", dst)
	for _, l := range summary {
		fmt.Fprintf(r.w, "    %s\n", l)
	}
	if err != nil {
		return "", fmt.Errorf("ping %s failed: %w\n%s", dst, err, output)
	}
	counts, _, _ := strings.Cut(summary[0], ", time")
	return counts, nil
}

// kernel prints the NSM interfaces of a namespace.
func (r *report) kernel(title, netns string) {
	state, err := topology.Inspect(netns)
	if err != nil {
		fmt.Fprintf(r.w, "  %s: %v\n", title, err)
		return
	}
	fmt.Fprintf(r.w, "  %s:\n", title)
	for _, l := range state.Links {
		if l.Name == "lo" {
			continue
		}
		fmt.Fprintf(r.w, "    %s (%s) %s\n", l.Name, l.Type, strings.Join(l.Addrs, " "))
		for _, route := range state.RoutesVia(l.Name) {
			via := ""
			if route.Gw != "" {
				via = " via " + route.Gw
			}
			fmt.Fprintf(r.w, "      route %s%s\n", route.Dst, via)
		}
	}
}

// simulator prints the interfaces the forwarder created in a node's VPP.
func (r *report) simulator(ctx context.Context, d *domain.Domain, node *domain.Node) {
	interfaces, err := d.SimulatorInterfaces(ctx, node)
	if err != nil {
		fmt.Fprintf(r.w, "  VPP on %s: %v\n", node.Name, err)
		return
	}
	var names []string
	for _, i := range interfaces {
		if i.Kind == "local" {
			continue
		}
		names = append(names, fmt.Sprintf("%s (%s)", i.Name, i.Kind))
	}
	if len(names) == 0 {
		names = []string{"nothing"}
	}
	fmt.Fprintf(r.w, "  VPP on %s: %s\n", node.Name, strings.Join(names, ", "))
}
