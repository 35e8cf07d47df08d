package policyroute

import (
	"errors"
	"math"

	"golang.org/x/sys/unix"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// Defaults keep our tables far above the kernel's reserved IDs (0, 253-255) and away from the small
// numbers people and routing daemons pick by hand.
const (
	defaultFirstTable = 0x10000000
	defaultTableCount = 1 << 24
	defaultProtocol   = routeview.ForwarderProtocol
	// Policy rules sit ahead of the main (32766) and default (32767) lookups.
	defaultFirstPriority = 20000
	defaultPriorityCount = 10000
	lastUsablePriority   = 32765
	// defaultProbeLimit bounds the collision search; in a range this sparse a policy rarely needs a second probe.
	defaultProbeLimit = 16
)

type options struct {
	firstTable    uint32
	tableCount    uint32
	protocol      uint8
	firstPriority uint32
	priorityCount uint32
	probeLimit    int
	registry      *routeview.Registry
}

// Option configures the server.
type Option func(o *options)

// WithTableRange sets the routing table IDs [first, first+count) the server may use.
// IDs 0 and 253-255 are reserved by the kernel; NewServer panics if the range includes one of them.
func WithTableRange(first, count uint32) Option {
	return func(o *options) {
		o.firstTable = first
		o.tableCount = count
	}
}

// WithPriorityRange sets the ip rule priorities [first, first+count) policy rules get. A new rule takes the
// priority just below the lowest one in the range, so it goes to the head of the kernel's rule list (see
// priorities.go). The range must end before the main table's rule (32766).
func WithPriorityRange(first, count uint32) Option {
	return func(o *options) {
		o.firstPriority = first
		o.priorityCount = count
	}
}

// WithProbeLimit sets how many candidate tables a policy may try before the Request fails.
func WithProbeLimit(limit int) Option {
	return func(o *options) {
		o.probeLimit = limit
	}
}

// WithRegistry makes the server share its namespace views with other elements (see routeview); by default it
// has a registry of its own. The registry's mark must be the server's protocol.
func WithRegistry(registry *routeview.Registry) Option {
	return func(o *options) {
		o.registry = registry
	}
}

func newOptions(opts []Option) *options {
	o := &options{
		firstTable:    defaultFirstTable,
		tableCount:    defaultTableCount,
		protocol:      defaultProtocol,
		firstPriority: defaultFirstPriority,
		priorityCount: defaultPriorityCount,
		probeLimit:    defaultProbeLimit,
	}
	for _, opt := range opts {
		opt(o)
	}
	if err := o.validate(); err != nil {
		panic("policyroute: " + err.Error())
	}
	if uint32(o.probeLimit) > o.tableCount {
		o.probeLimit = int(o.tableCount)
	}
	if o.registry == nil {
		o.registry = routeview.NewRegistry(o.protocol)
	}
	if o.registry.Mark() != o.protocol {
		panic("policyroute: the registry's mark is not the server's protocol")
	}
	return o
}

func (o *options) validate() error {
	last := uint64(o.firstTable) + uint64(o.tableCount) - 1
	switch {
	case o.tableCount == 0:
		return errors.New("table range is empty")
	case o.firstTable == 0 || last > math.MaxUint32:
		return errors.New("table range must lie within 1..4294967295")
	case uint64(o.firstTable) <= 255 && last >= 253:
		return errors.New("table range includes a reserved table (253-255)")
	case o.firstPriority == 0 || o.priorityCount == 0 || uint64(o.firstPriority)+uint64(o.priorityCount)-1 > lastUsablePriority:
		return errors.New("priority range must lie within 1..32765")
	case o.protocol <= unix.RTPROT_STATIC:
		return errors.New("protocol values 0-4 belong to the kernel")
	case o.probeLimit < 1:
		return errors.New("probe limit must be at least 1")
	}
	return nil
}

func (o *options) lastPriority() uint32 {
	return o.firstPriority + o.priorityCount - 1
}

// DefaultTableRange is the range of routing tables the forwarder's policy routes use: what an
// operator's report calls this forwarder's table range.
func DefaultTableRange() (first, count uint32) {
	return defaultFirstTable, defaultTableCount
}
