package domain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// A vl3 network as deployments-k8s runs it (examples/features/vl3-basic): a vl3 IPAM server
// handing each vl3 endpoint a prefix of the network, vl3 endpoints of one service that peer with
// each other, and clients of that service. e2e-nse-vl3 is both the endpoint and, with `ipam`,
// the IPAM server; its endpoint routes in its pod's kernel (see its package comment).

// Vl3IPAM is a running vl3 IPAM server; URL is what endpoints are given to reach it.
type Vl3IPAM struct {
	*Endpoint
	URL string
}

// StartVl3IPAM starts a vl3 IPAM server in a new pod on node, handing out prefixSize prefixes
// of network, and waits until it serves.
func (d *Domain) StartVl3IPAM(ctx context.Context, node *Node, name, network string, prefixSize string) (*Vl3IPAM, error) {
	if d.cfg.Binaries.Vl3Endpoint == "" {
		return nil, errors.New("no e2e-nse-vl3 binary (Binaries.Vl3Endpoint)")
	}
	pod, err := d.addPod(node, name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(d.cfg.WorkDir, node.Name, name)
	url := "unix://" + filepath.Join(dir, "ipam.sock")
	proc, err := process.Start(process.Spec{
		Name:   name,
		Netns:  pod.Netns,
		Binary: d.cfg.Binaries.Vl3Endpoint,
		Args:   []string{"ipam"},
		Env: d.workloadEnv(node, name,
			"NSM_LISTEN_ON="+url,
			"NSM_PREFIX="+network,
			"NSM_PREFIX_SIZE="+prefixSize,
			"NSM_LOG_LEVEL="+d.cfg.LogLevel,
		),
		LogPath: filepath.Join(dir, "ipam.log"),
	})
	if err != nil {
		return nil, errors.Join(err, d.Topology.DeletePod(pod))
	}
	ipam := &Vl3IPAM{Endpoint: &Endpoint{Name: name, Pod: pod, Proc: proc, d: d}, URL: url}
	d.endpoints = append(d.endpoints, ipam.Endpoint)
	return ipam, waitForLogLine(ctx, proc, 0, "vl3 IPAM serving")
}

// StartVl3Endpoint starts a vl3 endpoint of service in a new pod on node, taking a prefix from
// each of ipams (one per IP family: two make a dual-stack network), and waits until it is
// registered and has peered with every vl3 endpoint of service registered before it. Its data
// plane is its pod's kernel (StartVl3VPPEndpoint: a VPP of its own, as upstream's).
func (d *Domain) StartVl3Endpoint(ctx context.Context, node *Node, name, service string, ipams []*Vl3IPAM, opts ...EndpointOption) (*Endpoint, error) {
	if d.cfg.Binaries.Vl3Endpoint == "" {
		return nil, errors.New("no e2e-nse-vl3 binary (Binaries.Vl3Endpoint)")
	}
	pod, err := d.addPod(node, name)
	if err != nil {
		return nil, err
	}
	return d.startVl3Endpoint(ctx, node, pod, filepath.Join(d.cfg.WorkDir, node.Name, name), service, ipams, opts)
}

// StartVl3VPPEndpoint is StartVl3Endpoint with the endpoint's data plane a real VPP of its own in
// its pod (the domain's RealVPP), as upstream's cmd-nse-vl3-vpp: its clients' connections and its
// peerings are memifs into that VPP.
func (d *Domain) StartVl3VPPEndpoint(ctx context.Context, node *Node, name, service string, ipams []*Vl3IPAM, opts ...EndpointOption) (*VPPEndpoint, error) {
	if d.cfg.Binaries.Vl3Endpoint == "" {
		return nil, errors.New("no e2e-nse-vl3 binary (Binaries.Vl3Endpoint)")
	}
	e, dir, err := d.startVPPEndpointPod(ctx, node, name)
	if err != nil {
		return nil, err
	}
	ownVPP := func(env []string) []string {
		env = append(env, "NSM_VPP_API_SOCKET="+e.vpp.APISocket)
		// For the peering's data-path check on upstream VPP, which lacks NSM's ping API.
		if vppctl := realvpp.Vppctl(d.cfg.RealVPP); fileExists(vppctl) {
			env = append(env, "NSM_VPPCTL="+vppctl, "NSM_VPP_CLI_SOCKET="+e.vpp.VPPLayout.CLISocket())
		}
		return env
	}
	started, err := d.startVl3Endpoint(ctx, node, e.Pod, dir, service, ipams, append([]EndpointOption{ownVPP}, opts...))
	if started != nil {
		e.Endpoint = started
	}
	return e, err
}

// startVl3Endpoint runs e2e-nse-vl3 in pod and waits for it to register and peer.
func (d *Domain) startVl3Endpoint(ctx context.Context, node *Node, pod *topology.Pod, dir, service string, ipams []*Vl3IPAM, opts []EndpointOption) (*Endpoint, error) {
	var servers []string
	for _, ipam := range ipams {
		servers = append(servers, ipam.URL)
	}
	env := d.tokenLifetimeEnv()
	for _, opt := range opts {
		env = opt(env)
	}
	proc, err := process.Start(process.Spec{
		Name:   pod.Name,
		Netns:  pod.Netns,
		Binary: d.cfg.Binaries.Vl3Endpoint,
		Env: append(d.workloadEnv(node, pod.Name,
			"NSM_CONNECT_TO=unix://"+node.NsmgrSocket,
			"NSM_LISTEN_ON=unix://"+filepath.Join(dir, "nse.sock"),
			"NSM_SERVICE_NAMES="+service,
			"NSM_PREFIX_SERVER_URL="+strings.Join(servers, ","),
			"NSM_LOG_LEVEL="+d.cfg.LogLevel,
		), env...),
		LogPath: filepath.Join(dir, "nse.log"),
	})
	if err != nil {
		return nil, errors.Join(err, d.Topology.DeletePod(pod))
	}
	e := &Endpoint{Name: pod.Name, Pod: pod, Proc: proc, d: d}
	d.endpoints = append(d.endpoints, e)
	// Its "registered for" line comes once it has peered, after its registration.
	waitCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return e, waitForLogLine(waitCtx, proc, 0, endpointRegistered)
}

// fileExists says whether path names an existing file.
func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}
