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
	if d.cfg.Binaries.FirewallEndpoint == "" {
		return nil, errors.New("no e2e-nse-firewall-vpp binary (Binaries.FirewallEndpoint)")
	}
	e, dir, err := d.startVPPEndpointPod(ctx, node, name)
	if err != nil {
		return nil, err
	}
	pairs := make([]string, 0, len(labels))
	for k, v := range labels {
		pairs = append(pairs, k+":"+v)
	}
	if e.Proc, err = process.Start(process.Spec{
		Name:   name,
		Netns:  e.Pod.Netns,
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
