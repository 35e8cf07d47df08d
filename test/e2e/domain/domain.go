package domain

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/spire"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// Config describes a domain to bring up.
type Config struct {
	Binaries *Binaries
	// SpireBinDir holds spire-server and spire-agent.
	SpireBinDir string
	// WorkDir receives sockets, SPIRE state and every process's log. Unix
	// socket paths must stay under 108 bytes, so keep it short.
	WorkDir string
	// NetnsPrefix starts the name of every namespace of this domain.
	NetnsPrefix string
	Nodes       int
	// Forwarder is what runs on every node; this project's forwarder-vpp when
	// its Binary is empty.
	Forwarder Forwarder
	// KernelInterfaceType (tap, veth or auto) is the forwarders' kernel
	// interface: NSM_KERNEL_INTERFACE_TYPE for a forwarder that reads it, what
	// /dev shows it otherwise (Forwarder.KernelInterfaceVariable).
	KernelInterfaceType string
	// LogLevel is the harness programs' NSM_LOG_LEVEL; ForwarderLogLevel the
	// forwarders' (INFO when empty, the forwarder's own default).
	LogLevel          string
	ForwarderLogLevel string
	// MaxTokenLifetime, when set, is NSM_MAX_TOKEN_LIFETIME of every NSM
	// program (registry, nsmgrs, forwarders, endpoints, clients): it bounds
	// how long a connection whose client died outlives it, and sets the
	// refresh pace (about a third of it).
	MaxTokenLifetime time.Duration
	// ClientRequestTimeout, when set, is the clients' NSM_REQUEST_TIMEOUT
	// (30s otherwise). sdk's timeout element closes a connection at its
	// expiry minus the Request's remaining deadline, so a short
	// MaxTokenLifetime needs a timeout well below it; it also bounds how long
	// a heal attempt stuck on a dead next hop blocks the next one.
	ClientRequestTimeout time.Duration
	// IdleCut, when set, puts a middlebox in front of every nsmgr for the
	// other nodes (e2e-idlecut, on the nsmgr's node, advertised as the nsmgr's
	// URL) that resets connections idle for this long, as cloud load
	// balancers and NATs do (field report 4).
	IdleCut time.Duration
	// RealVPP, when set, is the vpp binary every node runs (test/realvpp.Find), in the node's
	// namespace with a start-up configuration, sockets and shared-memory prefix of its own;
	// empty runs the simulator (Binaries.Simulator).
	RealVPP string
	// ForwarderEnv is added to the forwarders' environment (TELEMETRY, PROMETHEUS, ...).
	ForwarderEnv []string
	// ForwarderStartsVPP runs no VPP beside the forwarders: each starts RealVPP itself, its
	// own-VPP mode of the stock image (see ownvpp.go).
	ForwarderStartsVPP bool
	// CallLogs makes every nsmgr and endpoint record each Request and Close it serves or makes
	// (Node.CallLog, Endpoint.CallLog, ReadCalls): what the forwarder's Request latency is
	// measured from.
	CallLogs bool
	// VlanTrunk, when set, gives every node a trunk device for the remote vlan mechanism, and
	// every forwarder an NSM_DEVICE_SELECTOR_FILE mapping its via label to it (vlan.go).
	VlanTrunk *VlanTrunk
	// ExcludedPrefixes, when not nil, are the cluster's excluded prefixes: every nsmgr reads
	// them, as the stock nsmgr reads the file its exclude-prefixes sidecar writes, and adds them
	// to each Request it forwards, so that endpoints hand out none of them (excludedprefixes.go).
	ExcludedPrefixes []string
}

// Node is one node's running programs.
type Node struct {
	*topology.Node
	// VPP is the node's VPP: the simulator, or a real VPP when Config.RealVPP is set.
	VPP, Forwarder, Nsmgr *process.Process
	// IdleCut is the middlebox in front of the nsmgr (Config.IdleCut), or nil.
	IdleCut *process.Process
	// APISocket is VPP's API socket (the forwarder's NSM_VPP_API_SOCKET); VPP's stats socket
	// is beside it. StateSocket is the simulator's state socket (simulator only).
	APISocket, StateSocket string
	// VPPLayout is a real VPP's runtime directory and shared-memory prefix; nil for the
	// simulator.
	VPPLayout     *realvpp.Layout
	NsmgrSocket   string
	ForwarderName string
	// formerForwarderNames are the names of the node's replaced forwarders, whose records a
	// stock forwarder leaves to the registry's expiry.
	formerForwarderNames []string
	// StateDir is the forwarder's NSM_STATE_DIR, kept across its restarts.
	StateDir string
	// CallLog is the nsmgr's record of Requests and Closes (Config.CallLogs), or "".
	CallLog string
	// IdleInterfaces and IdleKernel are VPP's interfaces and the node
	// namespace's kernel state once the forwarder is ready and before any
	// connection: what every Close must return to.
	IdleInterfaces []VPPInterface
	IdleKernel     *topology.State
	// ownVPPPid is the VPP the forwarder started (Config.ForwarderStartsVPP), last seen.
	ownVPPPid int
	// extra names a node's additional forwarder (AddForwarder) and its VPP; empty for the
	// node's first forwarder. forwarderEnv is added to that forwarder's environment.
	extra        string
	forwarderEnv []string
}

// Domain is a running NSM domain.
type Domain struct {
	cfg      Config
	Topology *topology.Topology
	SPIRE    *spire.SPIRE
	Registry *process.Process
	// Trunk is the nodes' trunk for the remote vlan mechanism (Config.VlanTrunk), or nil.
	Trunk     *topology.Trunk
	Nodes     []*Node
	endpoints []*Endpoint
	// vlanEndpoints are the remote vlan endpoints (StartVlanEndpoint), vlanHosts the hosts on
	// the trunk (StartVlanHost).
	vlanEndpoints []*VlanEndpoint
	vlanHosts     []*process.Process
	clients       []*Client
	// vppClients are the clients with a VPP of their own (ConnectVPPClient).
	vppClients []*VPPClient
	// vppEndpoints are the endpoints with a VPP of their own (StartVPPEndpoint); each is in
	// endpoints too.
	vppEndpoints []*VPPEndpoint
	// extraForwarders are the nodes' additional forwarders, each with its own VPP (AddForwarder).
	extraForwarders []*Node
	// Timings records how long each step of bring-up took, in order.
	Timings []Timing
}

// Timing is one measured step.
type Timing struct {
	Step     string
	Duration time.Duration
}

const (
	nsmgrPort    = 5001
	registryPort = 5002
	idleCutPort  = 5003
	// startTimeout bounds bring-up and an endpoint's registration; a few
	// seconds here, much more when CI compiles and tests other packages
	// alongside.
	startTimeout = 2 * time.Minute
	// connectTimeout bounds a client's first Request, which retries until
	// then; generous for a CI machine compiling other packages alongside.
	connectTimeout = 2 * time.Minute
	stopGrace      = 15 * time.Second
	pollInterval   = 200 * time.Millisecond
	logTailLength  = 40
)

// Start brings the domain up; on error everything started is torn down.
func Start(ctx context.Context, cfg Config) (d *Domain, err error) {
	if cfg.Nodes < 1 {
		return nil, errors.New("a domain needs at least one node")
	}
	if cfg.ForwarderStartsVPP && cfg.RealVPP == "" {
		return nil, errors.New("a forwarder that starts its own VPP needs Config.RealVPP")
	}
	if cfg.LogLevel == "" {
		cfg.LogLevel = "INFO"
	}
	if cfg.ForwarderLogLevel == "" {
		cfg.ForwarderLogLevel = "INFO"
	}
	if cfg.Forwarder.Binary == "" {
		cfg.Forwarder = cfg.Binaries.ForwarderVPP()
	}
	if cfg.ForwarderStartsVPP && !cfg.Forwarder.Ours {
		return nil, fmt.Errorf("%s runs beside an external VPP only; ForwarderStartsVPP is this forwarder's own-VPP mode", cfg.Forwarder.Name)
	}
	d = &Domain{cfg: cfg}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, d.Diagnostics())
			_ = d.Close()
			d = nil
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	if err = d.step("namespaces", func() (stepErr error) {
		d.Topology, stepErr = topology.New(cfg.NetnsPrefix, cfg.Nodes)
		return stepErr
	}); err != nil {
		return d, err
	}
	if cfg.VlanTrunk != nil {
		if err = d.step("vlan trunk", d.addVlanTrunk); err != nil {
			return d, err
		}
	}
	var nodeNames []string
	for _, n := range d.Topology.Nodes {
		nodeNames = append(nodeNames, n.Name)
	}
	if err = d.step("SPIRE server and agents", func() (stepErr error) {
		d.SPIRE, stepErr = spire.Start(ctx, spire.Options{
			BinDir:    cfg.SpireBinDir,
			Dir:       filepath.Join(cfg.WorkDir, "spire"),
			Nodes:     nodeNames,
			Workloads: workloads(cfg),
		})
		return stepErr
	}); err != nil {
		return d, err
	}
	if err = d.step("registry (waits for the agents' first SVIDs)", func() error { return d.startRegistry(ctx) }); err != nil {
		return d, err
	}
	for _, tn := range d.Topology.Nodes {
		node := &Node{Node: tn}
		d.Nodes = append(d.Nodes, node)
		if err = d.step(tn.Name+": "+d.VPPName()+", nsmgr, forwarder", func() error { return d.startNode(ctx, node) }); err != nil {
			return d, err
		}
	}
	return d, nil
}

// workloads are the programs SPIRE gives an identity to, each told apart by its binary.
func workloads(cfg Config) []spire.Workload {
	list := []spire.Workload{
		{Name: "registry", Binary: cfg.Binaries.Registry},
		{Name: "nsmgr", Binary: cfg.Binaries.Nsmgr},
		{Name: "forwarder", Binary: cfg.Forwarder.Binary},
		{Name: "nse", Binary: cfg.Binaries.Endpoint},
		{Name: "nsc", Binary: cfg.Binaries.Client},
	}
	if cfg.Binaries.VlanEndpoint != "" {
		list = append(list, spire.Workload{Name: "nse-vlan", Binary: cfg.Binaries.VlanEndpoint})
	}
	if cfg.Binaries.VPPClient != "" {
		list = append(list, spire.Workload{Name: "nsc-vpp", Binary: cfg.Binaries.VPPClient})
	}
	if cfg.Binaries.VPPEndpoint != "" {
		list = append(list, spire.Workload{Name: "nse-vpp", Binary: cfg.Binaries.VPPEndpoint})
	}
	if cfg.Binaries.Vl3Endpoint != "" {
		list = append(list, spire.Workload{Name: "nse-vl3", Binary: cfg.Binaries.Vl3Endpoint})
	}
	if cfg.Binaries.FirewallEndpoint != "" {
		list = append(list, spire.Workload{Name: "nse-firewall-vpp", Binary: cfg.Binaries.FirewallEndpoint})
	}
	return list
}

func (d *Domain) step(name string, f func() error) error {
	start := time.Now()
	err := f()
	d.Timings = append(d.Timings, Timing{Step: name, Duration: time.Since(start)})
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (d *Domain) registrySocket() string { return filepath.Join(d.cfg.WorkDir, "registry.sock") }

func (d *Domain) registryTCP() string {
	return fmt.Sprintf("tcp://%s", netip.AddrPortFrom(d.Topology.Nodes[0].IP.Addr(), registryPort))
}

func (d *Domain) startRegistry(ctx context.Context) (err error) {
	first := d.Topology.Nodes[0]
	d.Registry, err = process.Start(process.Spec{
		Name:   "registry",
		Netns:  first.Netns,
		Binary: d.cfg.Binaries.Registry,
		Env: append([]string{
			"SPIFFE_ENDPOINT_SOCKET=" + d.SPIRE.SocketURL(first.Name),
			"NSM_LISTEN_ON=unix://" + d.registrySocket() + "," + d.registryTCP(),
			"NSM_LOG_LEVEL=" + d.cfg.LogLevel,
		}, d.tokenLifetimeEnv()...),
		LogPath: filepath.Join(d.cfg.WorkDir, "registry.log"),
	})
	if err != nil {
		return err
	}
	return waitForFile(ctx, d.Registry, d.registrySocket())
}

func (d *Domain) startNode(ctx context.Context, node *Node) error {
	dir := filepath.Join(d.cfg.WorkDir, node.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	node.APISocket = filepath.Join(dir, "vpp-api.sock")
	node.StateSocket = filepath.Join(dir, "vppsim-state.sock")
	node.NsmgrSocket = filepath.Join(dir, "nsmgr.sock")
	node.ForwarderName = "forwarder-" + node.Name
	node.StateDir = filepath.Join(dir, "forwarder-state")
	starts := []func(context.Context, *Node, string) error{d.startVPP, d.startIdleCut, d.startNsmgr, d.startForwarder}
	if d.cfg.ForwarderStartsVPP {
		starts = starts[1:]
	}
	for _, start := range starts {
		if err := start(ctx, node, dir); err != nil {
			return err
		}
	}
	var err error
	if node.IdleInterfaces, err = d.VPPInterfaces(ctx, node); err != nil {
		return err
	}
	node.IdleKernel, err = topology.Inspect(node.Netns)
	return err
}

// startIdleCut starts the middlebox in front of node's nsmgr when the domain
// has one.
func (d *Domain) startIdleCut(ctx context.Context, node *Node, dir string) (err error) {
	if d.cfg.IdleCut == 0 {
		return nil
	}
	listen := netip.AddrPortFrom(node.IP.Addr(), idleCutPort)
	node.IdleCut, err = process.Start(process.Spec{
		Name:    "idlecut-" + node.Name,
		Netns:   node.Netns,
		Binary:  d.cfg.Binaries.IdleCut,
		Args:    []string{"-listen", listen.String(), "-target", netip.AddrPortFrom(node.IP.Addr(), nsmgrPort).String(), "-idle", d.cfg.IdleCut.String()},
		LogPath: filepath.Join(dir, "idlecut.log"),
	})
	if err != nil {
		return err
	}
	return waitForLogLine(ctx, node.IdleCut, 0, "relaying")
}

// IdleCuts counts the connections node's middlebox has cut (Config.IdleCut).
func (n *Node) IdleCuts() (int, error) {
	if n.IdleCut == nil {
		return 0, nil
	}
	data, err := os.ReadFile(n.IdleCut.LogPath())
	if err != nil {
		return 0, err
	}
	return strings.Count(string(data), "cut idle connection"), nil
}

func (d *Domain) startNsmgr(ctx context.Context, node *Node, dir string) (err error) {
	env := []string{
		"NSM_LISTEN_ON=unix://" + node.NsmgrSocket + "," +
			fmt.Sprintf("tcp://%s", netip.AddrPortFrom(node.IP.Addr(), nsmgrPort)),
		"NSM_REGISTRY_URL=" + d.registryTCP(),
		"NSM_LOG_LEVEL=" + d.cfg.LogLevel,
	}
	if d.cfg.CallLogs {
		node.CallLog = filepath.Join(dir, "nsmgr-calls.jsonl")
		env = append(env, "NSM_CALL_LOG="+node.CallLog)
	}
	if node.IdleCut != nil {
		env = append(env, fmt.Sprintf("NSM_ADVERTISE_URL=tcp://%s", netip.AddrPortFrom(node.IP.Addr(), idleCutPort)))
	}
	configEnv, err := d.writeNsmgrConfig(dir)
	if err != nil {
		return err
	}
	env = append(env, configEnv...)
	node.Nsmgr, err = process.Start(process.Spec{
		Name:    "nsmgr-" + node.Name,
		Netns:   node.Netns,
		Binary:  d.cfg.Binaries.Nsmgr,
		Env:     append(d.workloadEnv(node, "nsmgr-"+node.Name, env...), d.tokenLifetimeEnv()...),
		LogPath: filepath.Join(dir, "nsmgr.log"),
	})
	if err != nil {
		return err
	}
	return waitForFile(ctx, node.Nsmgr, node.NsmgrSocket)
}

// startForwarder runs the forwarder exactly as a deployment configures the
// stock one, and waits until it says it is ready and is registered.
func (d *Domain) startForwarder(ctx context.Context, node *Node, dir string) (err error) {
	fwd := d.cfg.Forwarder
	env := []string{
		"NSM_LISTEN_ON=unix://" + filepath.Join(dir, "forwarder.sock"),
		"NSM_CONNECT_TO=unix://" + node.NsmgrSocket,
		"NSM_TUNNEL_IP=" + node.IP.Addr().String(),
		"NSM_VPP_API_SOCKET=" + node.APISocket,
		"NSM_VPP_INIT=NONE",
		"NSM_LOG_LEVEL=" + d.cfg.ForwarderLogLevel,
		"NSM_STATE_DIR=" + node.StateDir,
	}
	argv := []string{fwd.Binary}
	if fwd.KernelInterfaceVariable {
		env = append(env, "NSM_KERNEL_INTERFACE_TYPE="+d.cfg.KernelInterfaceType)
	} else if argv, err = vhostNetView(dir, d.cfg.KernelInterfaceType, argv); err != nil {
		return err
	}
	spec := process.Spec{
		Name:    node.ForwarderName,
		Netns:   node.Netns,
		Binary:  argv[0],
		Args:    argv[1:],
		Env:     append(d.workloadEnv(node, node.ForwarderName, append(env, d.deviceSelectorEnv()...)...), slices.Concat(d.tokenLifetimeEnv(), d.cfg.ForwarderEnv, node.forwarderEnv)...),
		LogPath: filepath.Join(dir, "forwarder.log"),
	}
	if d.cfg.ForwarderStartsVPP {
		var env []string
		if spec.Binary, spec.Args, env, err = d.prepareOwnVPP(node, dir); err != nil {
			return err
		}
		// Later values win: the own-VPP mode's socket and uplink init replace the external ones.
		spec.Env = append(spec.Env, env...)
		spec.TermLeaderOnly = true
	}
	if node.Forwarder, err = process.Start(spec); err != nil {
		return err
	}
	if err = waitForLogLine(ctx, node.Forwarder, 0, fwd.ReadyLine); err != nil {
		return err
	}
	if err = d.waitRegistered(ctx, node.Forwarder, node.ForwarderName); err != nil {
		return err
	}
	return d.noteOwnVPP(node)
}

// RunForwarderCommand runs the forwarder's binary with args where node's forwarder runs (its
// namespace, its environment), dead or alive, and returns what it printed.
func (d *Domain) RunForwarderCommand(ctx context.Context, node *Node, args ...string) ([]byte, error) {
	return process.Run(ctx, node.Forwarder.Spec(), args...)
}

// noteOwnVPP remembers the VPP node's forwarder started, to check at tear-down that it is gone.
func (d *Domain) noteOwnVPP(node *Node) (err error) {
	if d.cfg.ForwarderStartsVPP {
		node.ownVPPPid, err = d.VPPPid(node)
	}
	return err
}

// Forwarder is the forwarder the domain runs on every node.
func (d *Domain) Forwarder() Forwarder { return d.cfg.Forwarder }

// RestartForwarder SIGKILLs node's forwarder, leaving VPP and
// the kernel as they are, as when the forwarder's container is OOM-killed
// next to an external VPP, and starts it again with the same environment.
// It returns once the new run says it is ready: the old run's registration
// is still in the registry, so registration alone proves nothing.
func (d *Domain) RestartForwarder(ctx context.Context, node *Node) (err error) {
	node.Forwarder.Kill()
	if node.Forwarder, err = respawn(ctx, node.Forwarder, d.cfg.Forwarder.ReadyLine); err != nil {
		return err
	}
	return d.noteOwnVPP(node)
}

// RespawnForwarder starts node's forwarder again once it has ended by itself (a forwarder whose
// own VPP crashed stops), as the kubelet restarts a container, and returns once the new run is
// ready.
func (d *Domain) RespawnForwarder(ctx context.Context, node *Node) (err error) {
	if node.Forwarder, err = respawn(ctx, node.Forwarder, d.cfg.Forwarder.ReadyLine); err != nil {
		return err
	}
	return d.noteOwnVPP(node)
}

// RestartNsmgr SIGKILLs node's nsmgr and starts it again with the same
// environment, as a kubelet restarts a crashed container, returning once the
// new run serves.
func (d *Domain) RestartNsmgr(ctx context.Context, node *Node) error {
	node.Nsmgr.Kill()
	return d.RespawnNsmgr(ctx, node)
}

// RestartVPP SIGKILLs node's VPP, real or simulated, as a VPP crash (or a forwarder that takes its
// own VPP down with it) does: its interfaces and taps go with it. It starts it again, empty, and
// hands it the uplink as before, then returns.
func (d *Domain) RestartVPP(ctx context.Context, node *Node) error {
	node.VPP.Kill()
	if node.VPPLayout != nil {
		if err := node.VPPLayout.Sweep(); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return d.startVPP(ctx, node, filepath.Join(d.cfg.WorkDir, node.Name))
}

// ReplaceForwarder SIGKILLs node's forwarder and starts a new one under another name on the same
// node and state directory, as a DaemonSet does when it replaces a pod (NSM_NAME is the pod's
// name). It returns once the new forwarder is registered under its name.
func (d *Domain) ReplaceForwarder(ctx context.Context, node *Node, name string) error {
	node.Forwarder.Kill()
	node.formerForwarderNames = append(node.formerForwarderNames, node.ForwarderName)
	node.ForwarderName = name
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return d.startForwarder(ctx, node, filepath.Join(d.cfg.WorkDir, node.Name))
}

// DeleteForwarderPod stops node's forwarder with SIGTERM, as Kubernetes does when its pod is
// deleted, requiring a clean exit, and starts one under another name on the same node and state
// directory, as the DaemonSet's new pod; it returns once the new one is registered. The node's
// VPP, external here, stays (in stock's own-VPP pod it would go too).
func (d *Domain) DeleteForwarderPod(ctx context.Context, node *Node, name string) error {
	if err := node.Forwarder.Stop(stopGrace); err != nil {
		return fmt.Errorf("%s on SIGTERM: %w", node.ForwarderName, err)
	}
	node.formerForwarderNames = append(node.formerForwarderNames, node.ForwarderName)
	node.ForwarderName = name
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return d.startForwarder(ctx, node, filepath.Join(d.cfg.WorkDir, node.Name))
}

// DeleteRegistryPod stops the registry with SIGTERM, as Kubernetes does when its pod is deleted,
// requiring a clean exit, and starts it again on the same sockets, returning once it serves.
// e2e-registry keeps its records in memory: the new run starts empty (registry-k8s keeps them in
// etcd), and knows what registers again.
func (d *Domain) DeleteRegistryPod(ctx context.Context) (err error) {
	if err = d.Registry.Stop(stopGrace); err != nil {
		return fmt.Errorf("registry on SIGTERM: %w", err)
	}
	d.Registry, err = respawn(ctx, d.Registry, "registry serving on")
	return err
}

// RespawnNsmgr starts node's nsmgr again with the same environment once it
// has died (see process.Process.Kill), and returns once it serves.
func (d *Domain) RespawnNsmgr(ctx context.Context, node *Node) (err error) {
	node.Nsmgr, err = respawn(ctx, node.Nsmgr, "serving on")
	return err
}

// respawn starts dead's program again and waits until the new run writes
// readyLine to the log they share: a socket or a registration left by the
// dead run would prove nothing.
func respawn(ctx context.Context, dead *process.Process, readyLine string) (*process.Process, error) {
	logStart, err := fileSize(dead.LogPath())
	if err != nil {
		return dead, err
	}
	restarted, err := dead.Respawn()
	if err != nil {
		return dead, err
	}
	return restarted, waitForLogLine(ctx, restarted, logStart, readyLine)
}

// waitForLogLine waits until p's log holds line after its first logStart
// bytes.
func waitForLogLine(ctx context.Context, p *process.Process, logStart int64, line string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return poll(ctx, p, func() (bool, error) {
		data, readErr := os.ReadFile(p.LogPath())
		if readErr != nil {
			return false, readErr
		}
		return int64(len(data)) > logStart && strings.Contains(string(data[logStart:]), line), nil
	}, "%s never logged %q", p.Name(), line)
}

func fileSize(path string) (int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

func (d *Domain) tokenLifetimeEnv() []string {
	if d.cfg.MaxTokenLifetime == 0 {
		return nil
	}
	return []string{"NSM_MAX_TOKEN_LIFETIME=" + d.cfg.MaxTokenLifetime.String()}
}

// waitForFile waits for a socket or file that p creates once it is serving.
func waitForFile(ctx context.Context, p *process.Process, path string) error {
	return poll(ctx, p, func() (bool, error) {
		_, err := os.Stat(path)
		return err == nil, nil
	}, "%s never created %s", p.Name(), path)
}

// waitRegistered waits until name is in the registry, which proves that p
// holds an SVID, reached its nsmgr and was accepted.
func (d *Domain) waitRegistered(ctx context.Context, p *process.Process, name string) error {
	return poll(ctx, p, func() (bool, error) {
		records, err := d.Endpoints(ctx)
		if err != nil {
			return false, nil
		}
		for _, r := range records {
			if r.Name == name {
				return true, nil
			}
		}
		return false, nil
	}, "%s was never registered as %s", p.Name(), name)
}

// poll calls ready until it says yes, p dies, or ctx ends.
func poll(ctx context.Context, p *process.Process, ready func() (bool, error), format string, args ...any) error {
	for {
		ok, err := ready()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if exited, exitErr := p.Exited(); exited {
			return fmt.Errorf("%s exited (%v):\n%s", p.Name(), exitErr, p.LogTail(logTailLength))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf(format+": %w", append(args, ctx.Err())...)
		case <-time.After(pollInterval):
		}
	}
}

// Close stops everything in reverse order of start and deletes the
// namespaces. Programs that fail to shut down cleanly are reported, and so is
// anything still registered once every workload and forwarder has stopped
// (each must withdraw its own registration; of the forwarders, only this
// project's promises it).
func (d *Domain) Close() error {
	var errs []error
	for i := len(d.vppClients) - 1; i >= 0; i-- {
		errs = append(errs, d.vppClients[i].stop())
	}
	for i := len(d.clients) - 1; i >= 0; i-- {
		errs = append(errs, d.clients[i].Close())
	}
	for i := len(d.endpoints) - 1; i >= 0; i-- {
		errs = append(errs, d.endpoints[i].Close())
	}
	for i := len(d.vppEndpoints) - 1; i >= 0; i-- {
		errs = append(errs, d.vppEndpoints[i].stopVPP())
	}
	for i := len(d.vlanEndpoints) - 1; i >= 0; i-- {
		errs = append(errs, d.vlanEndpoints[i].Close())
	}
	for _, host := range d.vlanHosts {
		errs = append(errs, host.Stop(stopGrace))
	}
	forwardersStopped := true
	for i := len(d.extraForwarders) - 1; i >= 0; i-- {
		if d.extraForwarders[i].Forwarder != nil {
			errs = append(errs, d.extraForwarders[i].Forwarder.Stop(stopGrace))
		}
	}
	for i := len(d.Nodes) - 1; i >= 0; i-- {
		if d.Nodes[i].Forwarder == nil {
			forwardersStopped = false
			continue
		}
		errs = append(errs, d.Nodes[i].Forwarder.Stop(stopGrace), requireOwnVPPGone(d.Nodes[i]))
	}
	if forwardersStopped && d.Registry != nil && len(d.Nodes) > 0 {
		errs = append(errs, d.requireNothingRegistered())
	}
	for i := len(d.Nodes) - 1; i >= 0; i-- {
		for _, p := range []*process.Process{d.Nodes[i].Nsmgr, d.Nodes[i].IdleCut} {
			if p != nil {
				errs = append(errs, p.Stop(stopGrace))
			}
		}
		errs = append(errs, stopVPP(d.Nodes[i]))
	}
	for _, extra := range d.extraForwarders {
		errs = append(errs, stopVPP(extra))
	}
	if d.Registry != nil {
		errs = append(errs, d.Registry.Stop(stopGrace))
	}
	if d.SPIRE != nil {
		d.SPIRE.Close()
	}
	if d.Topology != nil {
		errs = append(errs, d.Topology.Close())
	}
	return errors.Join(errs...)
}

func (d *Domain) requireNothingRegistered() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	records, err := d.Endpoints(ctx)
	if err != nil {
		return fmt.Errorf("listing the registry after every workload stopped: %w", err)
	}
	// Withdrawing its own registration on SIGTERM is this project's design, not
	// the stock forwarder's: the registry expires a stock forwarder's record.
	forwarders := map[string]bool{}
	if !d.cfg.Forwarder.Ours {
		for _, n := range slices.Concat(d.Nodes, d.extraForwarders) {
			forwarders[n.ForwarderName] = true
			for _, name := range n.formerForwarderNames {
				forwarders[name] = true
			}
		}
	}
	var left []EndpointRecord
	for _, r := range records {
		if !forwarders[r.Name] {
			left = append(left, r)
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("still registered after every workload and forwarder stopped: %+v", left)
	}
	return nil
}

// workloadEnv is the environment every program of the domain runs with: its SPIFFE workload API
// and its identity as a pod of node (the sdk reads NODE_NAME and POD_NAME into path labels),
// followed by vars.
func (d *Domain) workloadEnv(node *Node, name string, vars ...string) []string {
	return append([]string{
		"SPIFFE_ENDPOINT_SOCKET=" + d.SPIRE.SocketURL(node.Name),
		"NODE_NAME=" + node.Name,
		"POD_NAME=" + name,
		"NSM_NAME=" + name,
	}, vars...)
}
