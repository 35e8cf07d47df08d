package domain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// AddForwarder starts another forwarder on node, as a second forwarder DaemonSet does (NSM's
// select-forwarder and multiforwarder examples): its own name, NSM_LABELS, socket, state
// directory and VPP (the simulator or a real VPP, as the node's), registered through the node's
// nsmgr. Its VPP gets an uplink of its own into the fabric, with an address of its own as the
// forwarder's NSM_TUNNEL_IP (topology.AddUplink): sharing the node's uplink and tunnel IP, two
// nodes' second VPPs would both answer for their node's address, and remote connections through
// them could not work. It returns the forwarder as a Node sharing node's namespace and nsmgr,
// whose IP is its own tunnel IP: the checks that take a node (VPPInterfaces, inspect) take it
// too. The domain's Close stops it with the node's forwarder.
func (d *Domain) AddForwarder(ctx context.Context, node *Node, name string, labels map[string]string) (*Node, error) {
	if d.cfg.ForwarderStartsVPP {
		return nil, errors.New("AddForwarder runs beside an external VPP only")
	}
	uplinkName := fmt.Sprintf("uplink%d", 1+d.extraForwardersOn(node))
	uplink, err := d.Topology.AddUplink(node.Node, uplinkName)
	if err != nil {
		return nil, err
	}
	extra := &Node{
		Node:          uplink,
		Nsmgr:         node.Nsmgr,
		NsmgrSocket:   node.NsmgrSocket,
		ForwarderName: name,
		extra:         "-" + name,
	}
	var pairs []string
	for k, v := range labels {
		pairs = append(pairs, k+":"+v)
	}
	extra.forwarderEnv = []string{"NSM_LABELS=" + strings.Join(pairs, ",")}
	dir := filepath.Join(d.cfg.WorkDir, node.Name, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	extra.APISocket = filepath.Join(dir, "vpp-api.sock")
	extra.StateSocket = filepath.Join(dir, "vppsim-state.sock")
	extra.StateDir = filepath.Join(dir, "forwarder-state")
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := d.startVPP(ctx, extra, dir); err != nil {
		return nil, errors.Join(err, stopVPP(extra))
	}
	d.extraForwarders = append(d.extraForwarders, extra)
	if err := d.startForwarder(ctx, extra, dir); err != nil {
		return nil, err
	}
	if extra.IdleInterfaces, err = d.VPPInterfaces(ctx, extra); err != nil {
		return nil, err
	}
	// What every Close returns the node's namespace to now includes whatever the new forwarder
	// set up at start.
	if node.IdleKernel, err = topology.Inspect(node.Netns); err != nil {
		return nil, err
	}
	extra.IdleKernel = node.IdleKernel
	return extra, nil
}

// extraForwardersOn counts the forwarders AddForwarder has added to node.
func (d *Domain) extraForwardersOn(node *Node) int {
	n := 0
	for _, extra := range d.extraForwarders {
		if extra.Netns == node.Netns {
			n++
		}
	}
	return n
}
