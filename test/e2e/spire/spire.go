package spire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/process"
)

// Workload is a program that gets its own SPIFFE ID, spiffe://<domain>/<Name>,
// on every node, selected by the absolute path of its binary.
type Workload struct {
	Name   string
	Binary string
}

// Options configure Start.
type Options struct {
	// BinDir holds spire-server and spire-agent (scripts/install-tools.sh).
	BinDir      string
	Dir         string
	TrustDomain string
	// Nodes get one agent each, attested by a join token of their own.
	Nodes     []string
	Workloads []Workload
}

// SPIRE is a running server with its agents.
type SPIRE struct {
	opts    Options
	server  *process.Process
	agents  map[string]*process.Process
	sockets map[string]string
	// port is the server's; the agents dial it.
	port int
}

const startTimeout = 60 * time.Second

// Start brings the server up, registers the workloads under every node,
// then starts and attests one agent per node. On error everything started is
// stopped again.
func Start(ctx context.Context, opts Options) (s *SPIRE, err error) {
	if opts.TrustDomain == "" {
		opts.TrustDomain = "nsm.e2e"
	}
	for _, bin := range []string{"spire-server", "spire-agent"} {
		if _, statErr := os.Stat(filepath.Join(opts.BinDir, bin)); statErr != nil {
			return nil, fmt.Errorf("%s missing in %s (run scripts/install-tools.sh): %w", bin, opts.BinDir, statErr)
		}
	}
	s = &SPIRE{opts: opts, agents: map[string]*process.Process{}, sockets: map[string]string{}}
	defer func() {
		if err != nil {
			s.Close()
			s = nil
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	if s.port, err = freePort(); err != nil {
		return s, err
	}
	if err = s.startServer(ctx); err != nil {
		return s, err
	}
	if err = s.registerWorkloads(ctx); err != nil {
		return s, err
	}
	return s, s.startAgents(ctx)
}

// startServer starts the server on its configuration and data directory, writing them first
// when absent, and returns once it is healthy.
func (s *SPIRE) startServer(ctx context.Context) (err error) {
	serverDir := filepath.Join(s.opts.Dir, "server")
	if err = writeFile(filepath.Join(serverDir, "server.conf"), serverConfig(serverDir, s.opts.TrustDomain, s.port)); err != nil {
		return err
	}
	s.server, err = process.Start(process.Spec{
		Name:    "spire-server",
		Binary:  filepath.Join(s.opts.BinDir, "spire-server"),
		Args:    []string{"run", "-config", filepath.Join(serverDir, "server.conf")},
		LogPath: filepath.Join(s.opts.Dir, "spire-server.log"),
	})
	if err != nil {
		return err
	}
	return s.waitHealthy(ctx, s.server, "spire-server", "-socketPath", s.serverSocket())
}

// startAgents writes the server's current trust bundle where the agents bootstrap from and
// starts one agent per node, each attested by a join token of its own.
func (s *SPIRE) startAgents(ctx context.Context) error {
	bundle, err := s.serverCLI(ctx, "bundle", "show")
	if err != nil {
		return err
	}
	bundlePath := filepath.Join(s.opts.Dir, "bundle.pem")
	if err = writeFile(bundlePath, bundle); err != nil {
		return err
	}
	for _, node := range s.opts.Nodes {
		if err = s.startAgent(ctx, node, bundlePath, s.port); err != nil {
			return err
		}
	}
	return nil
}

// SocketURL is the workload API socket of node's agent, as
// SPIFFE_ENDPOINT_SOCKET wants it.
func (s *SPIRE) SocketURL(node string) string { return "unix://" + s.sockets[node] }

// ID is the SPIFFE ID that Start registered for a workload name.
func (s *SPIRE) ID(workload string) string {
	return fmt.Sprintf("spiffe://%s/%s", s.opts.TrustDomain, workload)
}

// Processes are the running SPIRE programs, for diagnostics.
func (s *SPIRE) Processes() []*process.Process {
	procs := []*process.Process{s.server}
	for _, node := range s.opts.Nodes {
		if agent, ok := s.agents[node]; ok {
			procs = append(procs, agent)
		}
	}
	return procs
}

// Close stops the agents, then the server.
func (s *SPIRE) Close() {
	for _, agent := range s.agents {
		_ = agent.Stop(10 * time.Second)
	}
	if s.server != nil {
		_ = s.server.Stop(10 * time.Second)
	}
}

func (s *SPIRE) serverSocket() string {
	return filepath.Join(s.opts.Dir, "server", "server.sock")
}

func (s *SPIRE) nodeID(node string) string {
	return fmt.Sprintf("spiffe://%s/node/%s", s.opts.TrustDomain, node)
}

type entryFile struct {
	Entries []entry `json:"entries"`
}

type entry struct {
	SpiffeID  string     `json:"spiffe_id"`
	ParentID  string     `json:"parent_id"`
	Selectors []selector `json:"selectors"`
}

type selector struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// registerWorkloads creates all entries in one batch before any agent runs,
// so each agent's first sync already carries them.
func (s *SPIRE) registerWorkloads(ctx context.Context) error {
	var file entryFile
	for _, node := range s.opts.Nodes {
		for _, w := range s.opts.Workloads {
			binary, err := filepath.EvalSymlinks(w.Binary)
			if err != nil {
				return fmt.Errorf("workload %s: %w", w.Name, err)
			}
			file.Entries = append(file.Entries, entry{
				SpiffeID:  s.ID(w.Name),
				ParentID:  s.nodeID(node),
				Selectors: []selector{{Type: "unix", Value: "path:" + binary}},
			})
		}
	}
	data, err := json.Marshal(file)
	if err != nil {
		return err
	}
	path := filepath.Join(s.opts.Dir, "entries.json")
	if err = writeFile(path, string(data)); err != nil {
		return err
	}
	_, err = s.serverCLI(ctx, "entry", "create", "-data", path)
	return err
}

func (s *SPIRE) startAgent(ctx context.Context, node, bundlePath string, serverPort int) error {
	out, err := s.serverCLI(ctx, "token", "generate", "-spiffeID", s.nodeID(node), "-ttl", "600")
	if err != nil {
		return err
	}
	token := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "Token:"))
	if token == "" {
		return fmt.Errorf("spire-server token generate printed no token: %q", out)
	}
	agentDir := filepath.Join(s.opts.Dir, "agent-"+node)
	socket := filepath.Join(agentDir, "workload.sock")
	confPath := filepath.Join(agentDir, "agent.conf")
	if err = writeFile(confPath, agentConfig(agentDir, s.opts.TrustDomain, socket, bundlePath, serverPort)); err != nil {
		return err
	}
	agent, err := process.Start(process.Spec{
		Name:    "spire-agent-" + node,
		Binary:  filepath.Join(s.opts.BinDir, "spire-agent"),
		Args:    []string{"run", "-config", confPath, "-joinToken", token},
		LogPath: filepath.Join(s.opts.Dir, "spire-agent-"+node+".log"),
	})
	if err != nil {
		return err
	}
	s.agents[node] = agent
	s.sockets[node] = socket
	return s.waitHealthy(ctx, agent, "spire-agent", "-socketPath", socket)
}

func (s *SPIRE) serverCLI(ctx context.Context, args ...string) (string, error) {
	args = append(args, "-socketPath", s.serverSocket())
	cmd := exec.CommandContext(ctx, filepath.Join(s.opts.BinDir, "spire-server"), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("spire-server %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// waitHealthy polls the binary's own healthcheck, failing early with the log
// tail when the process has already died.
func (s *SPIRE) waitHealthy(ctx context.Context, p *process.Process, binary string, args ...string) error {
	args = append([]string{"healthcheck"}, args...)
	for {
		out, err := exec.CommandContext(ctx, filepath.Join(s.opts.BinDir, binary), args...).CombinedOutput()
		if err == nil {
			return nil
		}
		if exited, exitErr := p.Exited(); exited {
			return fmt.Errorf("%s exited during start-up (%v):\n%s", p.Name(), exitErr, p.LogTail(20))
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("%s not healthy: %s", p.Name(), strings.TrimSpace(string(out))),
				ctx.Err(), errors.New(p.LogTail(20)))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
