package routeview

import (
	"github.com/pkg/errors"
	"golang.org/x/sys/unix"
	"iter"
)

// syncRounds bounds how often one sync re-reads the kernel while the namespace keeps changing under it.
const syncRounds = 8

// View is one namespace's rules and routes, in step with the kernel whenever its holder reads it. It is
// only ever used by one reconciliation at a time (see Registry.Open); slices it returns are valid until
// its next Write.
type View struct {
	id      string
	request *requestConn
	monitor int
	s       *state
	// stale means notifications were lost or malformed: the view must be rebuilt from dumps.
	stale bool
	// resync are links after whose events the kernel may have dropped routes silently.
	resync map[int]struct{}
	// dumps counts the dumps this view made, for tests and benchmarks that show what a sync costs.
	dumps int

	registry *registryEntry
}

func newView(id string, request, monitor int, mark uint8) *View {
	return &View{id: id, request: newRequestConn(request), monitor: monitor, s: newState(mark), stale: true, resync: make(map[int]struct{})}
}

func (v *View) close() {
	closeFd(v.request.fd)
	closeFd(v.monitor)
}

// sync brings the view in step with the kernel: it applies every pending notification, re-reads the routes
// of links the kernel may have flushed, and rebuilds from dumps when notifications were lost.
func (v *View) sync() error {
	for range syncRounds {
		if err := v.drain(); err != nil {
			return err
		}
		switch {
		case v.stale:
			if err := v.rebuild(); err != nil {
				return err
			}
		case len(v.resync) > 0:
			for oif := range v.resync {
				delete(v.resync, oif)
				if err := v.resyncLink(oif); err != nil {
					return err
				}
			}
		default:
			return nil
		}
	}
	return nil
}

// drain applies every notification queued on the monitor socket, in order.
func (v *View) drain() error {
	buf := drainBuffers.Get().(*drainBuffer)
	defer drainBuffers.Put(buf)
	for {
		n, err := buf.receive(v.monitor)
		switch {
		case err == nil:
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return nil
		case errors.Is(err, unix.ENOBUFS):
			v.stale = true
			continue
		default:
			return errors.Wrap(err, "reading rtnetlink notifications")
		}
		for i := range n {
			datagram, truncated := buf.message(i)
			if _, ok := splitMessages(datagram, v.apply); !ok || truncated {
				v.stale = true
			}
		}
		if n < drainSlots {
			return nil
		}
	}
}

// apply applies one notification; the ones that cannot be decoded make the view stale.
func (v *View) apply(msgType, flags uint16, _ uint32, payload []byte) bool {
	switch msgType {
	case unix.RTM_NEWRULE, unix.RTM_DELRULE:
		rule, ok := parseRule(payload)
		switch {
		case !ok:
			v.stale = true
		case msgType == unix.RTM_NEWRULE:
			v.s.addRule(&rule)
		default:
			v.s.delRule(&rule)
		}
	case unix.RTM_NEWROUTE, unix.RTM_DELROUTE:
		route, ok := parseRoute(payload)
		switch {
		case !ok:
			v.stale = true
		case msgType == unix.RTM_DELROUTE:
			v.s.delRoute(&route)
		case flags&unix.NLM_F_REPLACE != 0:
			v.s.replaceRoute(&route)
		default:
			v.s.addRoute(&route)
		}
	case unix.RTM_NEWLINK, unix.RTM_DELLINK:
		l, ok := parseLink(payload)
		switch {
		case !ok:
			v.stale = true
		case msgType == unix.RTM_DELLINK:
			v.s.delLink(l.index)
			v.s.dropOif(l.index)
			delete(v.resync, l.index)
		default:
			v.s.setLink(&l)
			if l.flags&unix.IFF_UP == 0 {
				v.resyncIfRouted(l.index)
			}
		}
	case unix.RTM_DELADDR:
		index, addr, ok := parseAddr(payload)
		if !ok {
			v.stale = true
			break
		}
		// The kernel drops the routes through a link that lost its last IPv4 address, and routes anywhere
		// whose preferred source was the address.
		v.resyncIfRouted(index)
		for slot := range v.s.byPrefsrc[addr] {
			for _, r := range v.s.routes[slot] {
				v.resyncIfRouted(r.Oif)
			}
		}
	case unix.RTM_DELNEXTHOP:
		// Routes using a nexthop object go with it, silently.
		v.stale = true
	}
	return true
}

func (v *View) resyncIfRouted(oif int) {
	if len(v.s.byOif[oif]) > 0 {
		v.resync[oif] = struct{}{}
	}
}

// rebuild reads every rule and route from scratch, and forgets the links it knew: those are asked for
// again when needed.
func (v *View) rebuild() error {
	v.stale = false
	clear(v.resync)
	v.s.resetLinks()
	err := v.dump(unix.RTM_GETRULE, make([]byte, sizeofFibRuleHdr), v.s.resetRules, func(msgType uint16, payload []byte) {
		if rule, ok := parseRule(payload); ok && msgType == unix.RTM_NEWRULE {
			v.s.addRule(&rule)
		}
	})
	if err != nil {
		return errors.Wrap(err, "listing ip rules")
	}
	for range dumpRetries {
		v.s.resetRoutes()
		if err = v.dumpRoutes(unix.AF_INET, 0, v.s.addRoute); err == nil {
			err = v.dumpRoutes(unix.AF_INET6, 0, v.s.addRoute)
		}
		if !errors.Is(err, errDumpInterrupted) {
			break
		}
	}
	return errors.Wrap(err, "listing routes")
}

// resyncLink replaces what the view holds of the routes through oif with what the kernel holds.
func (v *View) resyncLink(oif int) error {
	var routes []Route
	var err error
	for range dumpRetries {
		routes = routes[:0]
		collect := func(r *Route) { routes = append(routes, *r) }
		if err = v.dumpRoutes(unix.AF_INET, oif, collect); err == nil {
			err = v.dumpRoutes(unix.AF_INET6, oif, collect)
		}
		if !errors.Is(err, errDumpInterrupted) {
			break
		}
	}
	if err != nil && !errors.Is(err, unix.ENODEV) {
		return errors.Wrapf(err, "listing the routes through link %d", oif)
	}
	v.s.dropOif(oif)
	for i := range routes {
		if routes[i].Oif == oif {
			v.s.addRoute(&routes[i])
		}
	}
	return nil
}

// dumpRoutes hands every route of family, only those through oif unless it is 0, to each.
func (v *View) dumpRoutes(family uint8, oif int, each func(*Route)) error {
	request := make([]byte, unix.SizeofRtMsg)
	request[0] = family
	if oif != 0 {
		request = appendUint32Attr(request, unix.RTA_OIF, uint32(oif))
	}
	var malformed bool
	err := v.dump(unix.RTM_GETROUTE, request, func() {}, func(msgType uint16, payload []byte) {
		route, ok := parseRoute(payload)
		if msgType != unix.RTM_NEWROUTE {
			return
		}
		if !ok {
			malformed = true
			return
		}
		each(&route)
	})
	if err == nil && malformed {
		err = errors.New("malformed route in dump")
	}
	return err
}

func (v *View) dump(msgType uint16, payload []byte, reset func(), each func(msgType uint16, payload []byte)) error {
	v.dumps++
	return v.request.dumpConsistent(msgType, payload, reset, each)
}

// Mark is the rtnetlink protocol value of the forwarder's rules and routes.
func (v *View) Mark() uint8 { return v.s.mark }

// Link returns the index of the named interface and whether it is up. A link the view has not seen yet is
// asked of the kernel once; notifications keep what it says true from then on.
func (v *View) Link(name string) (index int, up bool, err error) {
	l, ok := v.s.links[name]
	if !ok {
		if l, err = v.request.link(name); err != nil {
			return 0, false, err
		}
		v.s.setLink(&l)
	}
	return l.index, l.flags&unix.IFF_UP != 0, nil
}

// SetLinkUp brings the link up.
func (v *View) SetLinkUp(index int) error {
	if err := v.request.setLinkUp(index); err != nil {
		return err
	}
	return v.sync()
}

// Rules returns the rules that look up table.
func (v *View) Rules(table uint32) []Rule {
	return v.s.rules[table]
}

// Routes yields the routes of table.
func (v *View) Routes(table uint32) iter.Seq[*Route] {
	return func(yield func(*Route) bool) {
		for slot := range v.s.byTable[table] {
			routes := v.s.routes[slot]
			for i := range routes {
				if !yield(&routes[i]) {
					return
				}
			}
		}
	}
}

// RouteCount is the number of routes in table.
func (v *View) RouteCount(table uint32) int {
	n := 0
	for slot := range v.s.byTable[table] {
		n += len(v.s.routes[slot])
	}
	return n
}

// RoutesAt returns the routes in slot.
func (v *View) RoutesAt(slot Slot) []Route {
	return v.s.routes[slot]
}

// MarkedVia yields the routes through oif, in every table, that carry the mark.
func (v *View) MarkedVia(oif int) iter.Seq[*Route] {
	return func(yield func(*Route) bool) {
		for slot := range v.s.byOif[oif] {
			routes := v.s.routes[slot]
			for i := range routes {
				if routes[i].Oif == oif && routes[i].Protocol == v.s.mark && !yield(&routes[i]) {
					return
				}
			}
		}
	}
}

// EmptyRuleTables returns the tables that a marked rule looks up and that hold no marked route: rules left
// behind when the kernel dropped a link's routes (the link went away or lost its last IPv4 address) and
// nobody has claimed them since.
func (v *View) EmptyRuleTables() []uint32 {
	out := make([]uint32, 0, len(v.s.emptyRuled))
	for table := range v.s.emptyRuled {
		out = append(out, table)
	}
	return out
}

// LowestPriority returns the lowest priority among the family's rules within [first, last].
func (v *View) LowestPriority(family uint8, first, last uint32) (uint32, bool) {
	f, ok := familyIndex(family)
	if !ok {
		return 0, false
	}
	c := &v.s.lowest[f]
	if !c.valid || c.first != first || c.last != last {
		*c = lowestCache{first: first, last: last, valid: true}
		for p := range v.s.priorities[f] {
			if p >= first && p <= last && (!c.found || p < c.value) {
				c.found, c.value = true, p
			}
		}
	}
	return c.value, c.found
}

// PriorityUsed tells whether a rule of the family has priority p.
func (v *View) PriorityUsed(family uint8, p uint32) bool {
	f, ok := familyIndex(family)
	return ok && v.s.priorities[f][p] > 0
}

// Write applies ops in order, in batches, and brings the view in step with their effect.
func (v *View) Write(ops []Op) error {
	if len(ops) == 0 {
		return nil
	}
	err := v.request.write(ops, func() {
		if drainErr := v.drain(); drainErr != nil {
			v.stale = true
		}
	})
	if v.stale || len(v.resync) > 0 {
		if syncErr := v.sync(); err == nil {
			err = syncErr
		}
	}
	return err
}

// Tables yields every table that holds a route or that a rule looks up, each once, in no order: what
// an operator's report walks to find state in a range of tables.
func (v *View) Tables() iter.Seq[uint32] {
	return func(yield func(uint32) bool) {
		seen := make(map[uint32]bool, len(v.s.byTable)+len(v.s.rules))
		for _, tables := range []func(func(uint32) bool){mapKeys(v.s.byTable), mapKeys(v.s.rules)} {
			for table := range tables {
				if !seen[table] {
					seen[table] = true
					if !yield(table) {
						return
					}
				}
			}
		}
	}
}

func mapKeys[V any](m map[uint32]V) func(func(uint32) bool) {
	return func(yield func(uint32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
