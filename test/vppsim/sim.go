package vppsim

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/dataplane"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vpp"
)

// Config says where a simulator listens and lives.
type Config struct {
	// APISocket is the VPP API socket path (VPP's default is /run/vpp/api.sock).
	APISocket string
	// StateSocket, if set, serves the whole state as JSON to each connection.
	StateSocket string
	// Netns is the namespace (name under /var/run/netns, or a path) the simulator's own
	// interfaces live in: af_packet host interfaces and VXLAN sockets. Empty means the
	// calling process's namespace.
	Netns string
	// Logger receives the simulator's log; nil discards it.
	Logger *slog.Logger
}

// Sim is a running simulator.
type Sim struct {
	vpp       *vpp.VPP
	api       *server.Server
	stateSrv  *stateServer
	apiSocket string
	closeOnce sync.Once
	closeErr  error
}

// Start brings up an empty VPP on cfg.APISocket, replacing a stale socket file. It stops
// when ctx is done or Close is called.
func Start(ctx context.Context, cfg Config) (*Sim, error) {
	if cfg.APISocket == "" {
		return nil, errors.New("vppsim: APISocket is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	v := vpp.New(dataplane.NamespacePath(cfg.Netns), log)
	apiSrv, err := server.Listen(cfg.APISocket, server.NewMessageTable(), v, log)
	if err != nil {
		v.Close()
		return nil, err
	}
	s := &Sim{vpp: v, api: apiSrv, apiSocket: cfg.APISocket}
	if cfg.StateSocket != "" {
		s.stateSrv, err = serveState(cfg.StateSocket, s.Snapshot, log)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	go func() {
		<-ctx.Done()
		_ = s.Close()
	}()
	return s, nil
}

// APISocket is the path clients connect to.
func (s *Sim) APISocket() string { return s.apiSocket }

// State returns a copy of the simulator's whole configuration.
func (s *Sim) State() *state.State { return s.vpp.State() }

// Snapshot is what the state socket serves: the configuration and who is connected.
type Snapshot struct {
	Version string               `json:"version"`
	Clients []server.SessionInfo `json:"clients"`
	State   *state.State         `json:"state"`
}

// Snapshot returns the state together with the connected API clients.
func (s *Sim) Snapshot() *Snapshot {
	return &Snapshot{Version: vpp.Version, Clients: s.api.Sessions(), State: s.vpp.State()}
}

// Close disconnects every client and removes every kernel-side object, like a VPP crash.
func (s *Sim) Close() error {
	s.closeOnce.Do(func() {
		if s.stateSrv != nil {
			s.stateSrv.close()
		}
		s.closeErr = s.api.Close()
		s.vpp.Close()
	})
	return s.closeErr
}
