package domain

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
)

// VlanTrunk is the remote vlan set-up of NSM's remotevlan_vpp example: every node has a trunk
// device (the example's ext_net1), and every forwarder's NSM_DEVICE_SELECTOR_FILE maps the
// label via: Via to it, as the example's device-selector ConfigMap does.
type VlanTrunk struct {
	Device string
	Via    string
	// MTU, when set, is every node's trunk device's MTU (the remotevlan set-up gives ext_net1
	// 1450), set before any forwarder takes the device.
	MTU int
}

// vlanEndpointPort is where the first remote vlan endpoint listens on its node's address; each
// further one takes the next port.
const vlanEndpointPort = 5004

// addVlanTrunk creates the trunk before any VPP or forwarder runs (the forwarder hands the
// device to VPP at start-up) and writes the selector file the forwarders are given.
func (d *Domain) addVlanTrunk() (err error) {
	if d.Trunk, err = d.Topology.AddTrunk(d.cfg.VlanTrunk.Device); err != nil {
		return err
	}
	if mtu := d.cfg.VlanTrunk.MTU; mtu != 0 {
		for _, node := range d.Topology.Nodes {
			out, mtuErr := exec.Command("ip", "-n", node.Netns, "link", "set", d.cfg.VlanTrunk.Device, "mtu", fmt.Sprint(mtu)).CombinedOutput()
			if mtuErr != nil {
				return fmt.Errorf("%s: mtu %d on %s: %w: %s", node.Name, mtu, d.cfg.VlanTrunk.Device, mtuErr, out)
			}
		}
	}
	selector := fmt.Sprintf("---\ninterfaces:\n  - name: %s\n    matches:\n      - labelSelector:\n          - via: %s\n",
		d.cfg.VlanTrunk.Device, d.cfg.VlanTrunk.Via)
	return os.WriteFile(d.deviceSelectorFile(), []byte(selector), 0o644)
}

func (d *Domain) deviceSelectorFile() string {
	return filepath.Join(d.cfg.WorkDir, "device-selector.yaml")
}

// deviceSelectorEnv is the forwarders' NSM_DEVICE_SELECTOR_FILE when the domain has a trunk.
func (d *Domain) deviceSelectorEnv() []string {
	if d.cfg.VlanTrunk == nil {
		return nil
	}
	return []string{"NSM_DEVICE_SELECTOR_FILE=" + d.deviceSelectorFile()}
}

// VlanEndpoint is a remote vlan endpoint (e2e-nse-vlan): a control-plane program only, on a
// node's network as the example's nse-remote-vlan in nsm-system; no pod of its own holds
// anything of the data path.
type VlanEndpoint struct {
	Name string
	Proc *process.Process
	// URL is where the forwarders dial it.
	URL string
}

// StartVlanEndpoint starts a remote vlan endpoint for service (a comma-separated list for
// several, all on the same VLAN) in node's namespace, handing out addresses of cidr and answering
// with vlanID (0: the untagged trunk) via the domain trunk's label, registered straight with the
// registry; it returns once the endpoint is registered.
func (d *Domain) StartVlanEndpoint(ctx context.Context, node *Node, name, service, cidr string, vlanID int) (*VlanEndpoint, error) {
	if d.cfg.VlanTrunk == nil {
		return nil, errors.New("a remote vlan endpoint needs a domain with a trunk (Config.VlanTrunk)")
	}
	if d.cfg.Binaries.VlanEndpoint == "" {
		return nil, errors.New("no e2e-nse-vlan binary (Binaries.VlanEndpoint)")
	}
	port := vlanEndpointPort + uint16(len(d.vlanEndpoints))
	url := fmt.Sprintf("tcp://%s", netip.AddrPortFrom(node.IP.Addr(), port))
	dir := filepath.Join(d.cfg.WorkDir, node.Name, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	proc, err := process.Start(process.Spec{
		Name:   name,
		Netns:  node.Netns,
		Binary: d.cfg.Binaries.VlanEndpoint,
		Env: append(d.workloadEnv(node, name,
			"NSM_CONNECT_TO="+d.registryTCP(),
			"NSM_LISTEN_ON="+url,
			"NSM_SERVICE_NAMES="+service,
			"NSM_CIDR_PREFIX="+cidr,
			fmt.Sprintf("NSM_VLAN_ID=%d", vlanID),
			"NSM_VIA="+d.cfg.VlanTrunk.Via,
			"NSM_LOG_LEVEL="+d.cfg.LogLevel,
		), d.tokenLifetimeEnv()...),
		LogPath: filepath.Join(dir, "nse-vlan.log"),
	})
	if err != nil {
		return nil, err
	}
	e := &VlanEndpoint{Name: name, Proc: proc, URL: url}
	d.vlanEndpoints = append(d.vlanEndpoints, e)
	waitCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err = d.waitRegistered(waitCtx, proc, name); err != nil {
		return nil, err
	}
	return e, nil
}

// Close stops the endpoint, which unregisters itself first.
func (e *VlanEndpoint) Close() error {
	if e.Proc == nil {
		return nil
	}
	return e.Proc.Stop(stopGrace)
}

// StartVlanHost puts a host with addr on VLAN vlanID of the trunk, as the example's tester
// container with its eth0.<id>, and returns its VLAN interface's name. The host runs
// e2e-vlanhost: this kernel has no 802.1Q links. VLAN 0 is the untagged trunk: addr goes on the
// host's trunk interface itself, as the Kernel2RVlanMultiNS tester's eth0 has it.
func (d *Domain) StartVlanHost(ctx context.Context, vlanID int, addr netip.Prefix) (string, error) {
	if d.Trunk == nil {
		return "", errors.New("a host on a VLAN needs a domain with a trunk (Config.VlanTrunk)")
	}
	if vlanID == 0 {
		out, err := exec.CommandContext(ctx, "ip", "-n", d.Trunk.HostNetns, "addr", "add", addr.String(), "dev", d.Trunk.HostIfname).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("ip addr add %s dev %s: %w: %s", addr, d.Trunk.HostIfname, err, out)
		}
		return d.Trunk.HostIfname, nil
	}
	name := fmt.Sprintf("%s.%d", d.Trunk.HostIfname, vlanID)
	host, err := process.Start(process.Spec{
		Name:    "vlanhost-" + name,
		Netns:   d.Trunk.HostNetns,
		Binary:  d.cfg.Binaries.VlanHost,
		Args:    []string{"-trunk", d.Trunk.HostIfname, "-vlan", fmt.Sprint(vlanID), "-name", name, "-addr", addr.String()},
		LogPath: filepath.Join(d.cfg.WorkDir, "vlanhost-"+name+".log"),
	})
	if err != nil {
		return "", err
	}
	d.vlanHosts = append(d.vlanHosts, host)
	return name, waitForLogLine(ctx, host, 0, "ready:")
}
