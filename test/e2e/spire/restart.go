package spire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// stopGrace is how long a SPIRE program gets to exit after SIGTERM, as a pod's termination grace.
const stopGrace = 10 * time.Second

// RestartServer stops the server with SIGTERM, as deleting its pod does, and starts it again on
// the same data directory (its datastore and its CA's keys are on disk, as on the server's
// persistent volume). The agents stay and reconnect by themselves. It returns once the new run
// is healthy.
func (s *SPIRE) RestartServer(ctx context.Context) error {
	if err := s.server.Stop(stopGrace); err != nil {
		return fmt.Errorf("spire-server on SIGTERM: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return s.startServer(ctx)
}

// RestartAgents stops every agent with SIGTERM, as deleting the agents' pods does, and starts a
// new one per node serving the same workload API socket. A new pod's agent attests again: here
// with a fresh join token (a token is single-use) and an empty data directory. It returns once
// every new agent is healthy.
func (s *SPIRE) RestartAgents(ctx context.Context) error {
	if err := s.stopAgents(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	return s.startAgents(ctx)
}

// Reinstall removes SPIRE completely, as deleting its namespace does: the agents and the server
// stopped with SIGTERM, their data (datastore, CA keys, registration entries) deleted. Then it
// installs SPIRE again: a server with a new CA, the workloads registered again, new agents. The
// workloads keep running and must take the new identities from the agents' sockets.
func (s *SPIRE) Reinstall(ctx context.Context) error {
	err := s.stopAgents()
	if stopErr := s.server.Stop(stopGrace); stopErr != nil {
		err = errors.Join(err, fmt.Errorf("spire-server on SIGTERM: %w", stopErr))
	}
	if err != nil {
		return err
	}
	if err = os.RemoveAll(filepath.Join(s.opts.Dir, "server", "data")); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err = s.startServer(ctx); err != nil {
		return err
	}
	if err = s.registerWorkloads(ctx); err != nil {
		return err
	}
	return s.startAgents(ctx)
}

// stopAgents stops every agent with SIGTERM and deletes its data directory.
func (s *SPIRE) stopAgents() error {
	var err error
	for node, agent := range s.agents {
		if stopErr := agent.Stop(stopGrace); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("%s on SIGTERM: %w", agent.Name(), stopErr))
		}
		err = errors.Join(err, os.RemoveAll(filepath.Join(s.opts.Dir, "agent-"+node, "data")))
		delete(s.agents, node)
	}
	return err
}
