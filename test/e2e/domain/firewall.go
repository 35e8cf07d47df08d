package domain

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
)

// StartFirewallEndpoint starts a pod on node with a real VPP of its own (the domain's RealVPP)
// and a pass-through endpoint for service, as NSM's cmd-nse-firewall-vpp: memif from the
// forwarder on the way in, a memif onward to whatever the service's matches choose for its
// labels, the two cross-connected in its VPP, and, with aclConfig (a file in
// cmd-nse-firewall-vpp's format; empty for none), those ACL rules on the way in. It registers
// itself with labels, never the service, and StartFirewallEndpoint returns once it is
// registered.
func (d *Domain) StartFirewallEndpoint(ctx context.Context, node *Node, name, service string, labels map[string]string, aclConfig string) (*VPPEndpoint, error) {
	if !d.RealVPP() {
		return nil, errors.New("an endpoint with a VPP of its own needs a real VPP (Config.RealVPP)")
	}
	if d.cfg.Binaries.FirewallEndpoint == "" {
		return nil, errors.New("no e2e-nse-firewall-vpp binary (Binaries.FirewallEndpoint)")
	}
	pod, err := d.Topology.AddPod(node.Node, name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(d.cfg.WorkDir, node.Name, name)
	e := &VPPEndpoint{Endpoint: &Endpoint{Name: name, Pod: pod, d: d}}
	d.vppEndpoints = append(d.vppEndpoints, e)
	if e.vpp, err = d.startPodVPP(ctx, pod, dir); err != nil {
		return nil, err
	}
	e.VPP = e.vpp.VPP
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+":"+v)
	}
	if e.Proc, err = process.Start(process.Spec{
		Name:   name,
		Netns:  pod.Netns,
		Binary: d.cfg.Binaries.FirewallEndpoint,
		Env: append(d.workloadEnv(node, name,
			"NSM_CONNECT_TO=unix://"+node.NsmgrSocket,
			"NSM_LISTEN_ON=unix://"+filepath.Join(dir, "nse.sock"),
			"NSM_SERVICE_NAME="+service,
			"NSM_LABELS="+strings.Join(pairs, ","),
			"NSM_ACL_CONFIG_PATH="+aclConfig,
			"NSM_VPP_API_SOCKET="+e.vpp.APISocket,
			"NSM_LOG_LEVEL="+d.cfg.LogLevel,
		), d.tokenLifetimeEnv()...),
		LogPath: filepath.Join(dir, "nse-firewall-vpp.log"),
	}); err != nil {
		return nil, err
	}
	d.endpoints = append(d.endpoints, e.Endpoint)
	waitCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err = d.waitRegistered(waitCtx, e.Proc, name); err != nil {
		return nil, err
	}
	return e, nil
}
