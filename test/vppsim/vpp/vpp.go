package vpp

import (
	"log/slog"
	"sync"
	"time"

	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/test/vppsim/dataplane"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/server"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/state"
)

// Version is what show_version reports.
const Version = "24.10-vppsim"

type handlerFunc func(s *server.Session, req api.Message) ([]api.Message, bool)

// VPP is one simulated VPP instance. API handlers run one at a time under mu, as VPP runs
// them on its main thread; the packet path only reads.
type VPP struct {
	log      *slog.Logger
	plane    *dataplane.Plane
	handlers map[string]handlerFunc

	// interfacesChanged runs after a message that added or removed interfaces, before its
	// reply goes out, so that tables derived from the interface list (the stats segment)
	// are current by the time a client learns about the change.
	interfacesChanged func()

	mu          sync.RWMutex
	state       *state.State
	dirty       bool
	subscribers map[*server.Session]uint32 // want_interface_events: session -> pid
	// eventsFor holds the other event registrations (session -> pid) by event name.
	eventsFor map[string]map[*server.Session]uint32

	macMu sync.Mutex
	macs  map[uint32]macTable // bridge domain -> learned MACs

	// memifSeed is VPP's random_u32 state for memif socket IDs.
	memifSeed uint32
	// started is when this VPP began: `show clock` counts from it.
	started time.Time
}

// New returns an empty VPP whose af_packet and VXLAN sockets live in ownNetns (a path;
// empty for the process's namespace).
func New(ownNetns string, log *slog.Logger) *VPP {
	v := &VPP{
		log:         log,
		handlers:    make(map[string]handlerFunc),
		state:       state.New(),
		subscribers: make(map[*server.Session]uint32),
		eventsFor:   make(map[string]map[*server.Session]uint32),
		macs:        make(map[uint32]macTable),
		started:     time.Now(),
	}
	v.plane = dataplane.New(ownNetns, v, log)
	v.registerInterfaces()
	v.registerIP()
	v.registerTap()
	v.registerAfPacket()
	v.registerL2()
	v.registerL3xc()
	v.registerVxlan()
	v.registerACL()
	v.registerRecorded()
	v.registerIkev2()
	v.registerCLI()
	return v
}

// Handle implements server.Handler.
func (v *VPP) Handle(s *server.Session, req api.Message) ([]api.Message, bool) {
	h, ok := v.handlers[req.GetMessageName()]
	if !ok {
		return nil, false
	}
	replies, handled, changed := v.handleLocked(h, s, req)
	if changed && v.interfacesChanged != nil {
		v.interfacesChanged()
	}
	return replies, handled
}

// handleLocked runs h under the state lock; the deferred unlock keeps a panicking handler
// (which the server turns into an error reply) from leaving the simulator locked.
func (v *VPP) handleLocked(h handlerFunc, s *server.Session, req api.Message) (replies []api.Message, handled, changed bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	defer func() {
		changed = v.dirty
		v.dirty = false
	}()
	replies, handled = h(s, req)
	return replies, handled, false
}

// OnInterfacesChanged sets the hook run after interfaces were added or removed. Set it
// before serving clients.
func (v *VPP) OnInterfacesChanged(fn func()) { v.interfacesChanged = fn }

// SessionClosed implements server.Handler: a gone client receives no more events.
func (v *VPP) SessionClosed(s *server.Session) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.subscribers, s)
	for _, subs := range v.eventsFor {
		delete(subs, s)
	}
}

// State returns a copy of the whole configuration.
func (v *VPP) State() *state.State {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.state.Clone()
}

// InterfaceCounters lists every sw_if_index up to the highest allocated one with its name
// ("" for deleted ones) and packet counters, the table VPP's stats segment exposes.
func (v *VPP) InterfaceCounters() (names []string, counters []dataplane.Counters) {
	v.mu.RLock()
	n := v.state.NextSwIfIndex
	names = make([]string, n)
	for idx, i := range v.state.Interfaces {
		names[idx] = i.Name
	}
	v.mu.RUnlock()
	counters = make([]dataplane.Counters, n)
	for idx := range counters {
		counters[idx] = v.plane.Counters(uint32(idx))
	}
	return names, counters
}

// Close removes every kernel-side object, as a VPP crash would.
func (v *VPP) Close() {
	v.plane.Close()
}

// on registers fn for messages of type T.
func on[T api.Message](v *VPP, fn func(s *server.Session, req T) []api.Message) {
	var zero T
	v.handlers[zero.GetMessageName()] = func(s *server.Session, req api.Message) ([]api.Message, bool) {
		typed, ok := req.(T)
		if !ok {
			return nil, false
		}
		return fn(s, typed), true
	}
}

func one(m api.Message) []api.Message { return []api.Message{m} }

func (v *VPP) iface(idx uint32) (*state.Interface, bool) {
	i, ok := v.state.Interfaces[idx]
	return i, ok
}
