package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// natBalancer is the load balancer's data plane: the pod's kernel in place of upstream's VPP
// cnat translation (the VPP the harness runs is built without the cnat plugin). New flows to
// vip:port are spread over the servers at targetPort by nftables DNAT (conntrack keeps a flow
// on its server), and their source becomes vip so that the answers come back through this pod
// to be translated back, as cnat's source endpoint does.
type natBalancer struct {
	vip        net.IP
	protocol   string // tcp or udp
	port       uint16
	targetPort uint16
}

// natTable is the nftables table the load balancer owns in its pod.
const natTable = "nsm-vl3-lb"

func (n *natBalancer) family() string {
	if n.vip.To4() != nil {
		return "ip"
	}
	return "ip6"
}

// ruleset replaces the table with one balancing over servers, in one nft transaction; without
// servers the table goes.
func (n *natBalancer) ruleset(servers []net.IP) string {
	family := n.family()
	var b strings.Builder
	// Declaring the table first makes the delete valid when there is none yet.
	fmt.Fprintf(&b, "table %s %s {}\ndelete table %s %s\n", family, natTable, family, natTable)
	if len(servers) == 0 {
		return b.String()
	}
	targets := make([]string, 0, len(servers))
	addrs := make([]string, 0, len(servers))
	for i, server := range servers {
		targets = append(targets, fmt.Sprintf("%d : %s . %d", i, server, n.targetPort))
		addrs = append(addrs, server.String())
	}
	fmt.Fprintf(&b, "table %s %s {\n", family, natTable)
	fmt.Fprintf(&b, "\tchain balance {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n")
	fmt.Fprintf(&b, "\t\t%s daddr %s %s dport %d dnat %s addr . port to numgen random mod %d map { %s }\n\t}\n",
		family, n.vip, n.protocol, n.port, family, len(servers), strings.Join(targets, ", "))
	fmt.Fprintf(&b, "\tchain answer {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n")
	fmt.Fprintf(&b, "\t\tct status dnat %s daddr { %s } %s dport %d snat %s to %s\n\t}\n}\n",
		family, strings.Join(addrs, ", "), n.protocol, n.targetPort, family, n.vip)
	return b.String()
}

// program makes the pod's kernel balance over servers.
func (n *natBalancer) program(ctx context.Context, servers []net.IP) error {
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(n.ruleset(servers))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %w: %s", err, out)
	}
	return nil
}

// enableForwarding lets the pod's kernel forward what it translated: the flows leave by the
// interface they came in, so it sends no redirects either. The settings are the pod's own.
func (n *natBalancer) enableForwarding() error {
	settings := map[string]string{"/proc/sys/net/ipv4/ip_forward": "1", "/proc/sys/net/ipv4/conf/all/send_redirects": "0"}
	if n.family() == "ip6" {
		settings = map[string]string{"/proc/sys/net/ipv6/conf/all/forwarding": "1"}
	}
	for path, value := range settings {
		if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
			return err
		}
	}
	return nil
}
