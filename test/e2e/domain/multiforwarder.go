package domain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// AddForwarder starts another forwarder on node, as a second forwarder DaemonSet does (NSM's
// select-forwarder and multiforwarder examples): its own name, NSM_LABELS, socket, state
// directory and VPP (the simulator or a real VPP, as the node's), registered through the node's
// nsmgr. Its VPP gets the node's uplink as an af_packet interface with the node's tunnel IP too,
// as the second DaemonSet's own VPP does on the host network (sdk-vpp's mechanisms look the
// tunnel IP up in VPP even for a local connection); with two nodes both VPPs would answer for
// it, so it is meant for local connections. It returns the forwarder as a Node sharing node's namespace and nsmgr: the
// checks that take a node (VPPInterfaces, inspect) take it too. The domain's Close stops it
// with the node's forwarder.
func (d *Domain) AddForwarder(ctx context.Context, node *Node, name string, labels map[string]string) (*Node, error) {
	if d.cfg.ForwarderStartsVPP {
		return nil, errors.New("AddForwarder runs beside an external VPP only")
	}
	extra := &Node{
		Node:          node.Node,
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
	var err error
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
