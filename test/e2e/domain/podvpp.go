package domain

import (
	"context"
	"path/filepath"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// startPodVPP runs a real VPP of the pod's own in its namespace, as NSM's VPP workloads
// (cmd-nsc-vpp, cmd-nse-icmp-responder-vpp) have one beside their program, whatever the nodes
// run; its files live under dir. The returned Node stands in for the pod where the domain's VPP
// helpers want one (its namespace, API socket, layout), and holds the VPP's interfaces before
// anything was asked of it.
func (d *Domain) startPodVPP(ctx context.Context, pod *topology.Pod, dir string) (*Node, error) {
	vpp := &Node{Node: &topology.Node{Name: pod.Name, Netns: pod.Netns}}
	layout, err := realvpp.NewLayout(filepath.Join(dir, "vpp"), pod.Netns)
	if err != nil {
		return nil, err
	}
	if err = layout.WriteConfig(); err != nil {
		return nil, err
	}
	vpp.VPPLayout, vpp.APISocket = &layout, layout.APISocket()
	// The node's VPP is started as startVPP's real-VPP half does, without an uplink.
	if vpp.VPP, err = process.Start(process.Spec{
		Name: "vpp-" + pod.Name, Netns: pod.Netns, Binary: d.cfg.RealVPP, Args: []string{"-c", layout.ConfigPath()},
		LogPath: filepath.Join(dir, "vpp-output.log"),
	}); err != nil {
		return nil, err
	}
	if err = awaitRealVPP(ctx, vpp); err != nil {
		return vpp, err
	}
	vpp.IdleInterfaces, err = d.VPPInterfaces(ctx, vpp)
	return vpp, err
}

// podVPPCLI runs a debug CLI command on a pod's VPP through its CLI socket, as the examples'
// `kubectl exec ... -- vppctl` does, and returns its output. Not through the binary API's
// cli_inband: a ping there would take the events of VPP's API process and drop the calls the pod's
// own NSM program makes meanwhile, stalling its heal (realvpp.CLI).
func (d *Domain) podVPPCLI(ctx context.Context, vpp *Node, command string) (string, error) {
	return realvpp.CLI(ctx, realvpp.Vppctl(d.cfg.RealVPP), *vpp.VPPLayout, command)
}
