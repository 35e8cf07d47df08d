package domain

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
)

// VPPEndpoint is an endpoint whose data plane is a VPP of its own in its pod, as NSM's
// cmd-nse-icmp-responder-vpp (deployments-k8s apps/nse-memif): e2e-nse-vpp accepts memif
// connections only, which its pod's VPP (a real one, whatever the nodes run) serves as the memif
// master, with the endpoint's addresses on it.
type VPPEndpoint struct {
	// Endpoint is the program and its pod.
	*Endpoint
	// VPP is the pod's own VPP.
	VPP *process.Process
	vpp *Node
}

// StartVPPEndpoint starts a pod on node with a real VPP of its own (the domain's RealVPP) and an
// endpoint for service handing out addresses from cidr over memif, and waits until it is
// registered. Of the EndpointOptions, WithPayload, WithLabels and WithoutServiceRegistration
// apply.
func (d *Domain) StartVPPEndpoint(ctx context.Context, node *Node, name, service, cidr string, opts ...EndpointOption) (*VPPEndpoint, error) {
	if d.cfg.Binaries.VPPEndpoint == "" {
		return nil, errors.New("no e2e-nse-vpp binary (Binaries.VPPEndpoint)")
	}
	e, dir, err := d.startVPPEndpointPod(ctx, node, name)
	if err != nil {
		return nil, err
	}
	env := d.tokenLifetimeEnv()
	for _, opt := range opts {
		env = opt(env)
	}
	if e.Proc, err = process.Start(process.Spec{
		Name:   name,
		Netns:  e.Pod.Netns,
		Binary: d.cfg.Binaries.VPPEndpoint,
		Env: append(d.workloadEnv(node, name,
			"NSM_CONNECT_TO=unix://"+node.NsmgrSocket,
			"NSM_LISTEN_ON=unix://"+filepath.Join(dir, "nse.sock"),
			"NSM_SERVICE_NAMES="+service,
			"NSM_CIDR_PREFIX="+cidr,
			"NSM_VPP_API_SOCKET="+e.vpp.APISocket,
			"NSM_LOG_LEVEL="+d.cfg.LogLevel,
		), env...),
		LogPath: filepath.Join(dir, "nse-vpp.log"),
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

// startVPPEndpointPod makes the pod of an endpoint whose data plane is a real VPP of its own (the
// domain's RealVPP) and starts that VPP; the endpoint's program is the caller's to start. It
// returns the pod's directory too. The domain's Close stops the VPP and deletes the pod, also
// when this fails half-way.
func (d *Domain) startVPPEndpointPod(ctx context.Context, node *Node, name string) (*VPPEndpoint, string, error) {
	if !d.RealVPP() {
		return nil, "", errors.New("an endpoint with a VPP of its own needs a real VPP (Config.RealVPP)")
	}
	pod, err := d.addPod(node, name)
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Join(d.cfg.WorkDir, node.Name, name)
	e := &VPPEndpoint{Endpoint: &Endpoint{Name: name, Pod: pod, d: d}}
	d.vppEndpoints = append(d.vppEndpoints, e)
	if e.vpp, err = d.startPodVPP(ctx, pod, dir); err != nil {
		return nil, "", err
	}
	e.VPP = e.vpp.VPP
	return e, dir, nil
}

// CLI runs a debug CLI command on the endpoint's VPP and returns its output.
func (e *VPPEndpoint) CLI(ctx context.Context, command string) (string, error) {
	return e.d.podVPPCLI(ctx, e.vpp, command)
}

// Interfaces lists the endpoint VPP's interfaces.
func (e *VPPEndpoint) Interfaces(ctx context.Context) ([]VPPInterface, error) {
	return e.d.VPPInterfaces(ctx, e.vpp)
}

// IdleInterfaces are the endpoint VPP's interfaces before it served anything.
func (e *VPPEndpoint) IdleInterfaces() []VPPInterface { return e.vpp.IdleInterfaces }

// Close deletes the endpoint's pod as Kubernetes does: the program is stopped (it unregisters),
// then its VPP, and the pod's namespace is deleted.
func (e *VPPEndpoint) Close() error {
	errs := []error{}
	if e.Pod != nil {
		errs = append(errs, e.Proc.Stop(stopGrace))
	}
	errs = append(errs, e.stopVPP())
	return errors.Join(append(errs, e.Endpoint.Close())...)
}

// stopVPP stops the endpoint's VPP, once the endpoint has stopped, and removes what it left.
func (e *VPPEndpoint) stopVPP() error {
	if e.vpp == nil {
		return nil
	}
	err := stopVPP(e.vpp)
	e.vpp = nil
	return err
}
