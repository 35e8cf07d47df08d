package domain

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/networkservicemesh/api/pkg/api/networkservice"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
	"github.com/nsmfwd/forwarder-vpp/test/e2e/topology"
)

// Endpoint is an icmp-responder-like endpoint running in its own pod.
type Endpoint struct {
	Name string
	// CallLog is the endpoint's record of the Requests and Closes it served (Config.CallLogs),
	// or "".
	CallLog string
	Pod     *topology.Pod
	Proc    *process.Process
	d       *Domain
}

// Client is an NSC running in its own pod with its granted connections.
type Client struct {
	Name        string
	Pod         *topology.Pod
	Proc        *process.Process
	Connections []*networkservice.Connection
	d           *Domain
	connFile    string
}

// EndpointRecord is one registered endpoint as the registry lists it.
type EndpointRecord struct {
	Name     string   `json:"name"`
	URL      string   `json:"url"`
	Services []string `json:"services"`
}

// EndpointOption adds to an endpoint's configuration.
type EndpointOption func(env []string) []string

// WithPolicyRoutes makes the endpoint put one policy route per client address
// into each connection's IP context: traffic from that address to each of
// prefixes goes to the endpoint's address (e2e-nse's NSM_POLICY_ROUTES).
func WithPolicyRoutes(prefixes ...string) EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_POLICY_ROUTES="+strings.Join(prefixes, ","))
	}
}

// WithReaddressPrefix gives the endpoint a second address range: once told to
// (Endpoint.Readdress), it hands out addresses from cidr only, and every
// connection gets new ones on its next refresh (e2e-nse's
// NSM_READDRESS_CIDR_PREFIX).
func WithReaddressPrefix(cidr string) EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_READDRESS_CIDR_PREFIX="+cidr)
	}
}

// WithRoutesThroughClients makes the endpoint reach before through each
// client, and after instead once told to (Endpoint.Reroute), from each
// connection's next refresh on (e2e-nse's NSM_DST_ROUTES and
// NSM_REROUTE_DST_ROUTES).
func WithRoutesThroughClients(before, after string) EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_DST_ROUTES="+before, "NSM_REROUTE_DST_ROUTES="+after)
	}
}

// addPod makes a workload's pod with a pause process, as every Kubernetes pod has: the forwarders
// notice an endpoint pod's deletion by that process's end (vl3-nse-death, local-nse-death), since
// the namespace outlives the pod and its addresses would still answer pings.
func (d *Domain) addPod(node *Node, name string) (*topology.Pod, error) {
	return d.Topology.AddPodWithSandbox(node.Node, name)
}

// StartEndpoint starts an endpoint for service in a new pod on node, handing
// out addresses from cidr, and waits until it is registered.
func (d *Domain) StartEndpoint(ctx context.Context, node *Node, name, service, cidr string, opts ...EndpointOption) (*Endpoint, error) {
	pod, err := d.addPod(node, name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(d.cfg.WorkDir, node.Name, name)
	env := d.tokenLifetimeEnv()
	for _, opt := range opts {
		env = opt(env)
	}
	callLog := ""
	if d.cfg.CallLogs {
		callLog = filepath.Join(dir, "nse-calls.jsonl")
		env = append(env, "NSM_CALL_LOG="+callLog)
	}
	proc, err := process.Start(process.Spec{
		Name:   name,
		Netns:  pod.Netns,
		Binary: d.cfg.Binaries.Endpoint,
		Env: append(d.workloadEnv(node, name,
			"NSM_CONNECT_TO=unix://"+node.NsmgrSocket,
			"NSM_LISTEN_ON=unix://"+filepath.Join(dir, "nse.sock"),
			"NSM_SERVICE_NAMES="+service,
			"NSM_CIDR_PREFIX="+cidr,
			"NSM_LOG_LEVEL="+d.cfg.LogLevel,
		), env...),
		LogPath: filepath.Join(dir, "nse.log"),
	})
	if err != nil {
		return nil, errors.Join(err, d.Topology.DeletePod(pod))
	}
	e := &Endpoint{Name: name, CallLog: callLog, Pod: pod, Proc: proc, d: d}
	d.endpoints = append(d.endpoints, e)
	waitCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err = d.waitRegistered(waitCtx, proc, name); err != nil {
		return nil, err
	}
	return e, nil
}

// endpointRegistered is what e2e-nse logs once registered.
const endpointRegistered = "registered for"

// Restart SIGKILLs the endpoint, as an OOM kill does (no unregistration, its
// pod and the interfaces the forwarder put there stay), starts it again with
// the same environment, and returns once the new run is registered. The new
// run's IPAM remembers nothing of the old one.
func (e *Endpoint) Restart(ctx context.Context) (err error) {
	e.Proc.Kill()
	e.Proc, err = respawn(ctx, e.Proc, endpointRegistered)
	return err
}

// Readdress makes the endpoint hand out addresses from its readdress prefix
// (WithReaddressPrefix) from now on, and returns once it says so.
func (e *Endpoint) Readdress(ctx context.Context) error {
	return e.signal(ctx, syscall.SIGHUP, "SIGHUP: the endpoint hands out addresses from")
}

// Reroute makes the endpoint reach its second set of routes through each
// client (WithRoutesThroughClients) from now on, and returns once it says so.
func (e *Endpoint) Reroute(ctx context.Context) error {
	return e.signal(ctx, syscall.SIGUSR2, "SIGUSR2: the endpoint reaches")
}

// signal sends sig to the endpoint and waits until it logs ack.
func (e *Endpoint) signal(ctx context.Context, sig syscall.Signal, ack string) error {
	logStart, err := fileSize(e.Proc.LogPath())
	if err != nil {
		return err
	}
	if err = e.Proc.Signal(sig); err != nil {
		return err
	}
	return waitForLogLine(ctx, e.Proc, logStart, ack)
}

// Close stops the endpoint (which unregisters itself) and deletes its pod.
func (e *Endpoint) Close() error {
	if e.Pod == nil {
		return nil
	}
	err := e.Proc.Stop(stopGrace)
	err = errors.Join(err, e.d.Topology.DeletePod(e.Pod))
	e.Pod = nil
	return err
}

// Connect starts a client in a new pod on node asking for each of services
// (kernel://service/ifname) and waits until all are granted.
func (d *Domain) Connect(ctx context.Context, node *Node, name string, services ...string) (*Client, error) {
	c, err := d.StartClient(node, name, services...)
	if err != nil {
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	return c, c.WaitGranted(waitCtx)
}

// StartClient starts a client in a new pod on node asking for each of services
// (kernel://service/ifname), one after another, and returns at once: WaitGranted waits for
// them. One client process holds any number of connections.
func (d *Domain) StartClient(node *Node, name string, services ...string) (*Client, error) {
	return d.StartClientWithEnv(node, name, nil, services...)
}

// StartClientWithEnv is StartClient with env added to the client's environment (e2e-nsc's
// NSM_* variables, such as NSM_REFRESH_SPACING).
func (d *Domain) StartClientWithEnv(node *Node, name string, env []string, services ...string) (*Client, error) {
	pod, err := d.addPod(node, name)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(d.cfg.WorkDir, node.Name, name)
	connFile := filepath.Join(dir, "connections.json")
	proc, err := process.Start(process.Spec{
		Name:   name,
		Netns:  pod.Netns,
		Binary: d.cfg.Binaries.Client,
		Env: append(d.workloadEnv(node, name,
			"NSM_CONNECT_TO=unix://"+node.NsmgrSocket,
			"NSM_NETWORK_SERVICES="+strings.Join(services, ","),
			"NSM_CONNECTION_FILE="+connFile,
			"NSM_LOG_LEVEL="+d.cfg.LogLevel,
		), slices.Concat(d.clientEnv(), env)...),
		LogPath: filepath.Join(dir, "nsc.log"),
	})
	if err != nil {
		return nil, errors.Join(err, d.Topology.DeletePod(pod))
	}
	c := &Client{Name: name, Pod: pod, Proc: proc, d: d, connFile: connFile}
	d.clients = append(d.clients, c)
	return c, nil
}

// WaitGranted waits until every connection the client asked for is granted (or ctx ends), and
// reads them.
func (c *Client) WaitGranted(ctx context.Context) (err error) {
	if err = waitForFile(ctx, c.Proc, c.connFile); err != nil {
		return err
	}
	c.Connections, err = readConnections(c.connFile)
	return err
}

func (d *Domain) clientEnv() []string {
	env := d.tokenLifetimeEnv()
	if d.cfg.ClientRequestTimeout != 0 {
		env = append(env, "NSM_REQUEST_TIMEOUT="+d.cfg.ClientRequestTimeout.String())
	}
	return env
}

// Close makes the client close its connections and exit; an error means a
// Close was refused or failed. The pod namespace stays for inspection until
// DeletePod or the domain's Close.
func (c *Client) Close() error {
	return c.Proc.Stop(stopGrace)
}

// CloseLast makes the client close its last open connection and keep the others (e2e-nsc's
// SIGUSR1), and returns once it did, with Connections read again.
func (c *Client) CloseLast(ctx context.Context) error {
	logStart, err := fileSize(c.Proc.LogPath())
	if err != nil {
		return err
	}
	if err = c.Proc.Signal(syscall.SIGUSR1); err != nil {
		return err
	}
	if err = waitForLogLine(ctx, c.Proc, logStart, "SIGUSR1: closed"); err != nil {
		return fmt.Errorf("%s: %w", c.Name, err)
	}
	return c.ReloadConnections()
}

// Kill SIGKILLs the client, as an OOM kill does: no Close is sent, and its pod
// namespace stays with whatever NSM put there.
func (c *Client) Kill() {
	c.Proc.Kill()
}

// ConnectionsWritten is when the client last wrote its granted connections:
// it rewrites them after every successful refresh or heal.
func (c *Client) ConnectionsWritten() (time.Time, error) {
	info, err := os.Stat(c.connFile)
	if err != nil {
		return time.Time{}, err
	}
	return info.ModTime(), nil
}

// ReloadConnections reads the connections the client holds now.
func (c *Client) ReloadConnections() error {
	conns, err := readConnections(c.connFile)
	if err != nil {
		return err
	}
	c.Connections = conns
	return nil
}

// DeletePod removes the client's pod.
func (c *Client) DeletePod() error {
	if c.Pod == nil {
		return nil
	}
	err := c.d.Topology.DeletePod(c.Pod)
	c.Pod = nil
	return err
}

func readConnections(path string) ([]*networkservice.Connection, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var conns []*networkservice.Connection
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		if strings.TrimSpace(scanner.Text()) == "" {
			continue
		}
		conn := &networkservice.Connection{}
		if err = protojson.Unmarshal(scanner.Bytes(), conn); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		conns = append(conns, conn)
	}
	return conns, scanner.Err()
}

// Endpoints lists what the registry holds (endpoints and forwarders).
func (d *Domain) Endpoints(ctx context.Context) ([]EndpointRecord, error) {
	cmd := exec.CommandContext(ctx, d.cfg.Binaries.Registry, "find")
	cmd.Env = append(os.Environ(),
		"SPIFFE_ENDPOINT_SOCKET="+d.SPIRE.SocketURL(d.Nodes[0].Name),
		"NSM_CONNECT_TO=unix://"+d.registrySocket(),
		"NSM_LOG_LEVEL=WARN",
	)
	out, err := cmd.Output()
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil, fmt.Errorf("e2e-registry find: %w: %s", err, exitErr.Stderr)
		}
		return nil, err
	}
	var records []EndpointRecord
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" || !strings.HasPrefix(line, "{") {
			continue
		}
		var r EndpointRecord
		if err = json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("registry record %q: %w", line, err)
		}
		records = append(records, r)
	}
	return records, nil
}

// requestGrantedLine starts e2e-nsc's log line saying how long one first Request took:
// "first Request granted: <connection id> in <duration>".
const requestGrantedLine = "first Request granted: "

// RequestLatencies are how long each of the client's first Requests took, from the call to the
// granted connection, retries included, as the client measured them.
func (c *Client) RequestLatencies() ([]time.Duration, error) {
	data, err := os.ReadFile(c.Proc.LogPath())
	if err != nil {
		return nil, err
	}
	var latencies []time.Duration
	for _, line := range strings.Split(string(data), "\n") {
		_, rest, found := strings.Cut(line, requestGrantedLine)
		if !found {
			continue
		}
		_, took, found := strings.Cut(rest, " in ")
		if !found || len(strings.Fields(took)) == 0 {
			return nil, fmt.Errorf("%s: malformed line %q", c.Proc.LogPath(), line)
		}
		latency, parseErr := time.ParseDuration(strings.Fields(took)[0])
		if parseErr != nil {
			return nil, fmt.Errorf("%s: %w", c.Proc.LogPath(), parseErr)
		}
		latencies = append(latencies, latency)
	}
	return latencies, nil
}

// Clients are the clients started so far.
func (d *Domain) Clients() []*Client { return d.clients }

// WithPoliciesFile makes the endpoint hand every client the policies of path, a YAML file in the
// format of cmd-nse-icmp-responder's policy-based-routing config, as they are (e2e-nse's
// NSM_POLICIES_FILE).
func WithPoliciesFile(path string) EndpointOption {
	return func(env []string) []string {
		return append(env, "NSM_POLICIES_FILE="+path)
	}
}
