package domain

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.fd.io/govpp"
	"go.fd.io/govpp/api"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/l2"
	"github.com/networkservicemesh/govpp/binapi/vlib"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppclock"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppdump"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// VPPInterface is one interface of a node's VPP, as sw_interface_dump reports it, whichever
// the backend.
type VPPInterface struct {
	SwIfIndex uint32
	Name      string
	// Kind is what made the interface (tap, tun, af_packet, vxlan, memif, wireguard, ipsec,
	// loopback, subif, local), from VPP's device type.
	Kind string
	Tag  string
}

// SimInterface is the name VPPInterface had when every node ran the simulator.
type SimInterface = VPPInterface

// vppQueryTimeout bounds one look at a node's VPP.
const vppQueryTimeout = 10 * time.Second

// RealVPP says whether the nodes run a real VPP rather than the simulator.
func (d *Domain) RealVPP() bool { return d.cfg.RealVPP != "" }

// VPPName is what the nodes run: "vpp" or "vppsim".
func (d *Domain) VPPName() string {
	if d.RealVPP() {
		return "vpp"
	}
	return "vppsim"
}

// startVPP runs node's VPP, real or simulated, and hands it the node's uplink as the operator
// of an external VPP does.
func (d *Domain) startVPP(ctx context.Context, node *Node, dir string) (err error) {
	spec := process.Spec{Netns: node.Netns}
	if d.RealVPP() {
		layout, layoutErr := realvpp.NewLayout(filepath.Join(dir, "vpp"), node.Netns+node.extra)
		if layoutErr != nil {
			return layoutErr
		}
		if err = layout.WriteConfig(); err != nil {
			return err
		}
		node.VPPLayout = &layout
		node.APISocket = layout.APISocket()
		spec.Name, spec.Binary, spec.Args = "vpp-"+node.Name+node.extra, d.cfg.RealVPP, []string{"-c", layout.ConfigPath()}
		spec.LogPath = filepath.Join(dir, "vpp-output.log")
	} else {
		spec.Name, spec.Binary = "vppsim-"+node.Name+node.extra, d.cfg.Binaries.Simulator
		spec.Args = []string{"--api-socket", node.APISocket, "--state-socket", node.StateSocket}
		spec.LogPath = filepath.Join(dir, "vppsim.log")
	}
	if node.VPP, err = process.Start(spec); err != nil {
		return err
	}
	if d.RealVPP() {
		err = awaitRealVPP(ctx, node)
	} else {
		err = waitAnswering(ctx, node.VPP, node.APISocket, nil)
	}
	if err != nil {
		return err
	}
	return giveUplinkToVPP(ctx, node)
}

// awaitRealVPP waits until node's VPP answers with a clock that keeps the kernel's pace, and
// unpins it. A VPP that misread its clock at start-up stops answering within seconds
// (vppclock): it is killed, swept and run again, as realvpp.Start does.
func awaitRealVPP(ctx context.Context, node *Node) error {
	for attempt := 1; ; attempt++ {
		err := waitAnswering(ctx, node.VPP, node.APISocket, vppclock.CheckStarted)
		if !vppclock.Misstarted(err) || attempt == realvpp.ClockAttempts {
			if err != nil {
				return err
			}
			return realvpp.Unpin(node.VPP.Pid())
		}
		node.VPP.Kill()
		if err = node.VPPLayout.Sweep(); err != nil {
			return err
		}
		if node.VPP, err = node.VPP.Respawn(); err != nil {
			return err
		}
	}
}

// waitAnswering waits until p answers VPP's API on socket; then check, when set, runs on that
// first connection.
func waitAnswering(ctx context.Context, p *process.Process, socket string, check func(context.Context, api.Connection) error) error {
	return poll(ctx, p, func() (bool, error) {
		conn, err := govpp.Connect(socket)
		if err != nil {
			return false, nil
		}
		defer conn.Disconnect()
		if check != nil {
			return true, check(ctx, conn)
		}
		return true, nil
	}, "%s never answered on %s", p.Name(), socket)
}

// stopVPP stops node's VPP and removes what a real VPP leaves (its sockets and shared memory).
func stopVPP(node *Node) error {
	if node.VPP == nil {
		return nil
	}
	err := node.VPP.Stop(stopGrace)
	if node.VPPLayout == nil {
		return err
	}
	errs := []error{err, node.VPPLayout.Sweep()}
	if leftovers, leftErr := node.VPPLayout.Leftovers(); leftErr != nil || len(leftovers) > 0 {
		errs = append(errs, fmt.Errorf("%s left %v behind (%v)", node.VPP.Name(), leftovers, leftErr))
	}
	return errors.Join(errs...)
}

// withVPP runs f on a fresh API connection to node's VPP.
func withVPP(ctx context.Context, node *Node, f func(context.Context, api.Connection) error) error {
	ctx, cancel := context.WithTimeout(ctx, vppQueryTimeout)
	defer cancel()
	conn, err := govpp.Connect(node.APISocket)
	if err != nil {
		return fmt.Errorf("connecting to the VPP of %s: %w", node.Name, err)
	}
	defer conn.Disconnect()
	return f(ctx, conn)
}

// VPPInterfaces lists node's VPP interfaces by sw_if_index, through VPP's API.
func (d *Domain) VPPInterfaces(ctx context.Context, node *Node) ([]VPPInterface, error) {
	var found []VPPInterface
	err := dumpVPPInterfaces(ctx, node, func(details *interfaces.SwInterfaceDetails) {
		found = append(found, vppInterfaceOf(details))
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(found, func(a, b int) bool { return found[a].SwIfIndex < found[b].SwIfIndex })
	return found, nil
}

// dumpVPPInterfaces hands every interface of node's VPP, as sw_interface_dump reports it, to
// use: VPPInterfaces and VPPInterfaceMTUs read the same dump for different fields.
func dumpVPPInterfaces(ctx context.Context, node *Node, use func(*interfaces.SwInterfaceDetails)) error {
	err := withVPP(ctx, node, func(ctx context.Context, conn api.Connection) error {
		dump, err := interfaces.NewServiceClient(conn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
		if err != nil {
			return err
		}
		return vppdump.Drain(dump.Recv, "interfaces", use)
	})
	if err != nil {
		return fmt.Errorf("sw_interface_dump on %s: %w", node.Name, err)
	}
	return nil
}

func vppInterfaceOf(details *interfaces.SwInterfaceDetails) VPPInterface {
	return VPPInterface{SwIfIndex: uint32(details.SwIfIndex), Name: details.InterfaceName, Kind: kindOf(details), Tag: details.Tag}
}

// SimulatorInterfaces is VPPInterfaces, under its name from when every node ran the simulator.
func (d *Domain) SimulatorInterfaces(ctx context.Context, node *Node) ([]VPPInterface, error) {
	return d.VPPInterfaces(ctx, node)
}

// kindOf names what made an interface from VPP's device type, which differs in wording between
// VPP's device classes ("af-packet", "VXLAN", "Wireguard Tunnel").
func kindOf(details *interfaces.SwInterfaceDetails) string {
	if details.Type == interface_types.IF_API_TYPE_SUB {
		return "subif"
	}
	devType := strings.ToLower(details.InterfaceDevType)
	switch {
	case devType == "virtio" && strings.HasPrefix(details.InterfaceName, "tun"):
		return "tun"
	case devType == "virtio":
		return "tap"
	case devType == "af-packet" || devType == "af_packet":
		return "af_packet"
	case strings.HasPrefix(devType, "wireguard"):
		return "wireguard"
	case strings.HasPrefix(devType, "ipsec"):
		return "ipsec"
	}
	return devType
}

// cliCommands are what VPPState shows of a node's VPP.
var cliCommands = []string{"show interface", "show interface address", "show mode"}

// VPPState renders node's VPP for a person: VPP's own CLI output through the API for a real VPP,
// the simulator's table otherwise.
func (d *Domain) VPPState(ctx context.Context, node *Node) (string, error) {
	if !d.RealVPP() {
		return d.simulatorShow(ctx, node)
	}
	var b strings.Builder
	err := withVPP(ctx, node, func(ctx context.Context, conn api.Connection) error {
		for _, command := range cliCommands {
			reply := &vlib.CliInbandReply{}
			if err := conn.Invoke(ctx, &vlib.CliInband{Cmd: command}, reply); err != nil {
				return fmt.Errorf("%s: %w", command, err)
			}
			fmt.Fprintf(&b, "vpp# %s\n%s", command, reply.Reply)
		}
		return nil
	})
	if node.VPPLayout != nil {
		fmt.Fprintf(&b, "VPP's log (%s):\n%s\n", node.VPPLayout.LogPath(), process.Tail(node.VPPLayout.LogPath(), logTailLength/2))
	}
	return b.String(), err
}

// VPPShow is what node's VPP answers to a CLI command (cli_inband), real VPP only: the simulator
// answers few commands. Commands that return at once only: one that waits (ping) would drop the
// forwarder's API calls made meanwhile (realvpp.CLI).
func (d *Domain) VPPShow(ctx context.Context, node *Node, command string) (string, error) {
	if !d.RealVPP() {
		return "", fmt.Errorf("%s: the simulator does not answer %q", node.Name, command)
	}
	reply := &vlib.CliInbandReply{}
	err := withVPP(ctx, node, func(ctx context.Context, conn api.Connection) error {
		return conn.Invoke(ctx, &vlib.CliInband{Cmd: command}, reply)
	})
	if err != nil {
		return "", fmt.Errorf("%s on %s: %w", command, node.Name, err)
	}
	return reply.Reply, nil
}

// SimulatorState is VPPState, under its name from when every node ran the simulator.
func (d *Domain) SimulatorState(ctx context.Context, node *Node) (string, error) {
	return d.VPPState(ctx, node)
}

func (d *Domain) simulatorShow(ctx context.Context, node *Node, flags ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, vppQueryTimeout)
	defer cancel()
	args := append([]string{"show", "--state-socket", node.StateSocket}, flags...)
	out, err := exec.CommandContext(ctx, d.cfg.Binaries.Simulator, args...).Output()
	if err != nil {
		var stderr []byte
		if exitErr, ok := err.(*exec.ExitError); ok {
			stderr = exitErr.Stderr
		}
		return "", fmt.Errorf("vppsim show on %s: %w: %s", node.Name, err, stderr)
	}
	return string(out), nil
}

// VPPBridgeDomains lists the IDs of node's VPP bridge domains, sorted.
func (d *Domain) VPPBridgeDomains(ctx context.Context, node *Node) ([]uint32, error) {
	var ids []uint32
	err := withVPP(ctx, node, func(ctx context.Context, conn api.Connection) error {
		dump, err := l2.NewServiceClient(conn).BridgeDomainDump(ctx, &l2.BridgeDomainDump{BdID: ^uint32(0), SwIfIndex: ^interface_types.InterfaceIndex(0)})
		if err != nil {
			return err
		}
		return vppdump.Drain(dump.Recv, "bridge domains", func(details *l2.BridgeDomainDetails) {
			ids = append(ids, details.BdID)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bridge_domain_dump on %s: %w", node.Name, err)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	return ids, nil
}
