package domain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// VPPClient is a client whose data plane is a VPP of its own in its pod, as NSM's cmd-nsc-vpp:
// e2e-nsc-vpp asks for memif connections, which its pod's VPP (a real one, whatever the nodes
// run) takes up as the memif slave.
type VPPClient struct {
	Name string
	Pod  *topology.Pod
	// VPP is the pod's own VPP; Proc the client program.
	VPP, Proc   *process.Process
	Connections []*networkservice.Connection
	// node stands in for the pod where the domain's VPP helpers want a node: its namespace, API
	// socket and layout.
	node     *Node
	connFile string
	d        *Domain
}

// ConnectVPPClient starts a pod on node with a real VPP of its own (the domain's RealVPP) and a
// client asking for each of services (memif://service/name), and waits until all are granted.
func (d *Domain) ConnectVPPClient(ctx context.Context, node *Node, name string, services ...string) (*VPPClient, error) {
	if !d.RealVPP() {
		return nil, errors.New("a client with a VPP of its own needs a real VPP (Config.RealVPP)")
	}
	if d.cfg.Binaries.VPPClient == "" {
		return nil, errors.New("no e2e-nsc-vpp binary (Binaries.VPPClient)")
	}
	pod, err := d.addPod(node, name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(d.cfg.WorkDir, node.Name, name)
	c := &VPPClient{Name: name, Pod: pod, d: d, connFile: filepath.Join(dir, "connections.json")}
	d.vppClients = append(d.vppClients, c)
	if c.node, err = d.startPodVPP(ctx, pod, dir); err != nil {
		return nil, err
	}
	c.VPP = c.node.VPP
	if err = os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if c.Proc, err = process.Start(process.Spec{
		Name:   name,
		Netns:  pod.Netns,
		Binary: d.cfg.Binaries.VPPClient,
		Env: append(d.workloadEnv(node, name,
			"NSM_CONNECT_TO=unix://"+node.NsmgrSocket,
			"NSM_NETWORK_SERVICES="+strings.Join(services, ","),
			"NSM_VPP_API_SOCKET="+c.node.APISocket,
			"NSM_CONNECTION_FILE="+c.connFile,
			"NSM_LOG_LEVEL="+d.cfg.LogLevel,
		), d.clientEnv()...),
		LogPath: filepath.Join(dir, "nsc-vpp.log"),
	}); err != nil {
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err = waitForFile(waitCtx, c.Proc, c.connFile); err != nil {
		return nil, err
	}
	c.Connections, err = readConnections(c.connFile)
	return c, err
}

// ConnectionsWritten is when the client last wrote its granted connections: it rewrites them
// after every refresh and heal, once its VPP took the grant up.
func (c *VPPClient) ConnectionsWritten() (time.Time, error) {
	info, err := os.Stat(c.connFile)
	if err != nil {
		return time.Time{}, err
	}
	return info.ModTime(), nil
}

// ReloadConnections reads the connections the client holds now.
func (c *VPPClient) ReloadConnections() error {
	conns, err := readConnections(c.connFile)
	if err != nil {
		return err
	}
	c.Connections = conns
	return nil
}

// CLI runs a debug CLI command on the client's VPP and returns its output.
func (c *VPPClient) CLI(ctx context.Context, command string) (string, error) {
	return c.d.podVPPCLI(ctx, c.node, command)
}

// Interfaces lists the client VPP's interfaces; IdleInterfaces are those it had before the
// client asked for anything.
func (c *VPPClient) Interfaces(ctx context.Context) ([]VPPInterface, error) {
	return c.d.VPPInterfaces(ctx, c.node)
}

// IdleInterfaces are the client VPP's interfaces before the client asked for anything.
func (c *VPPClient) IdleInterfaces() []VPPInterface { return c.node.IdleInterfaces }

// Close makes the client close its connections and exit; an error means a Close failed. Its VPP
// keeps running until the domain closes.
func (c *VPPClient) Close() error {
	if c.Proc == nil {
		return nil
	}
	return c.Proc.Stop(stopGrace)
}

// stop ends the client, then its VPP, and removes what that VPP left.
func (c *VPPClient) stop() error {
	errs := []error{c.Close()}
	if c.node != nil && c.node.VPP != nil {
		errs = append(errs, stopVPP(c.node))
	}
	return errors.Join(errs...)
}
