package vppsim

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/dataplane"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/stats"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vpp"
)

// Config says where a simulator listens and lives.
type Config struct {
	// APISocket is the VPP API socket path (VPP's default is /run/vpp/api.sock).
	APISocket string
	// StateSocket, if set, serves the whole state as JSON to each connection.
	StateSocket string
	// StatsSocket, if set, serves VPP's stats segment (interface names and rx/tx/drop
	// counters) for govpp's statsclient, as VPP's stats.sock does.
	StatsSocket string
	// Netns is the namespace (name under /var/run/netns, or a path) the simulator's own
	// interfaces live in: af_packet host interfaces and VXLAN sockets. Empty means the
	// calling process's namespace.
	Netns string
	// Logger receives the simulator's log; nil discards it.
	Logger *slog.Logger
	// RecordRequests keeps every request for Requests/RequestsOf (memory grows with
	// traffic: for tests, not for long runs).
	RecordRequests bool
}

// Sim is a running simulator.
type Sim struct {
	vpp       *vpp.VPP
	api       *server.Server
	stateSrv  *stateServer
	statsSeg  *stats.Segment
	statsSrv  *stats.Server
	stopStats chan struct{}
	statsDone chan struct{}
	apiSocket string
	statsPath string
	recorder  *recorder
	closed    chan struct{}
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
	s := &Sim{vpp: v, apiSocket: cfg.APISocket, statsPath: cfg.StatsSocket, closed: make(chan struct{})}
	// Stats first: its hook must be in place before any client can change interfaces.
	if cfg.StatsSocket != "" {
		if err := s.serveStats(cfg.StatsSocket, log); err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	var handler server.Handler = v
	if cfg.RecordRequests {
		s.recorder = &recorder{Handler: v}
		handler = s.recorder
	}
	var err error
	s.api, err = server.Listen(cfg.APISocket, server.NewMessageTable(), handler, log)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	if cfg.StateSocket != "" {
		s.stateSrv, err = serveState(cfg.StateSocket, s.Snapshot, log)
		if err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.closed:
		}
	}()
	return s, nil
}

// statsPeriod is how often counters are republished; VPP's own collector also runs on a
// timer, so readers never expect them to be instantaneous.
const statsPeriod = 500 * time.Millisecond

const maxStatsInterfaces = 4096

func (s *Sim) serveStats(path string, log *slog.Logger) error {
	seg, err := stats.NewSegment(maxStatsInterfaces)
	if err != nil {
		return err
	}
	s.statsSeg = seg
	s.publishStats(log)
	s.vpp.OnInterfacesChanged(func() { s.publishStats(log) })
	s.statsSrv, err = stats.Serve(path, seg)
	if err != nil {
		return err
	}
	s.stopStats, s.statsDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.statsDone)
		ticker := time.NewTicker(statsPeriod)
		defer ticker.Stop()
		for {
			select {
			case <-s.stopStats:
				return
			case <-ticker.C:
				s.publishStats(log)
			}
		}
	}()
	return nil
}

func (s *Sim) publishStats(log *slog.Logger) {
	names, counters := s.vpp.InterfaceCounters()
	table := make([]stats.Interface, len(names))
	for i := range names {
		c := counters[i]
		table[i] = stats.Interface{Name: names[i], Counters: stats.Counters{
			RxPackets: c.RxPackets, RxBytes: c.RxBytes, TxPackets: c.TxPackets, TxBytes: c.TxBytes, Drops: c.Drops,
		}}
	}
	if err := s.statsSeg.Publish(table); err != nil {
		log.Warn("publishing stats", "error", err)
	}
}

// APISocket is the path clients connect to.
func (s *Sim) APISocket() string { return s.apiSocket }

// StatsSocket is the stats socket path ("" when not served).
func (s *Sim) StatsSocket() string { return s.statsPath }

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
		defer close(s.closed)
		if s.stateSrv != nil {
			s.stateSrv.close()
		}
		// Clients go first: their handlers may still publish into the stats segment.
		if s.api != nil {
			s.closeErr = s.api.Close()
		}
		if s.stopStats != nil {
			close(s.stopStats)
			<-s.statsDone
		}
		if s.statsSrv != nil {
			_ = s.statsSrv.Close()
		}
		if s.statsSeg != nil {
			_ = s.statsSeg.Close()
		}
		s.vpp.Close()
	})
	return s.closeErr
}
