package routeview

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

type slotSet map[Slot]struct{}

// state is what a view knows of a namespace, with the indexes its readers need. Every change goes
// through addRule, delRule, addRoute, replaceRoute and delRoute, which keep the indexes true and are
// idempotent, so a notification the dump already reflected changes nothing.
type state struct {
	mark uint8

	// routes holds every route outside the local table by slot; a slot rarely holds more than one.
	routes map[Slot][]Route
	// byTable and byOif index the slots that hold routes; byPrefsrc those holding a route with a
	// preferred source, which the kernel drops when the address goes.
	byTable   map[uint32]slotSet
	byOif     map[int]slotSet
	byPrefsrc map[netip.Addr]slotSet

	rules map[uint32][]Rule
	// priorities counts the rules at each priority, per family.
	priorities [2]map[uint32]int
	// lowest caches LowestPriority's answer for one family and range.
	lowest [2]lowestCache
	// links are the namespace's interfaces by name, and their names by index.
	links     map[string]link
	linkNames map[int]string
	// emptyRuled are the tables with a marked rule and no marked route.
	emptyRuled map[uint32]struct{}
}

type lowestCache struct {
	first, last uint32
	valid       bool
	// found is false when no rule has a priority in [first, last]; then value means nothing.
	found bool
	value uint32
}

// forget moves the cached lowest priority up past p, which no rule has any more.
func (c *lowestCache) forget(p uint32, counts map[uint32]int) {
	if !c.valid || !c.found || c.value != p {
		return
	}
	for q := p + 1; q <= c.last && q > p; q++ {
		if counts[q] > 0 {
			c.value = q
			return
		}
	}
	c.found = false
}

func newState(mark uint8) *state {
	s := &state{mark: mark}
	s.resetLinks()
	s.resetRules()
	s.resetRoutes()
	return s
}

func (s *state) resetLinks() {
	s.links = make(map[string]link)
	s.linkNames = make(map[int]string)
}

func (s *state) setLink(l *link) {
	if old, ok := s.linkNames[l.index]; ok && old != l.name {
		delete(s.links, old)
	}
	if other, ok := s.links[l.name]; ok && other.index != l.index {
		delete(s.linkNames, other.index)
	}
	if l.name != "" {
		s.links[l.name] = *l
		s.linkNames[l.index] = l.name
	}
}

func (s *state) delLink(index int) {
	delete(s.links, s.linkNames[index])
	delete(s.linkNames, index)
}

func (s *state) resetRules() {
	s.rules = make(map[uint32][]Rule)
	s.priorities = [2]map[uint32]int{make(map[uint32]int), make(map[uint32]int)}
	s.lowest = [2]lowestCache{}
	s.emptyRuled = make(map[uint32]struct{})
}

func (s *state) resetRoutes() {
	s.routes = make(map[Slot][]Route)
	s.byTable = make(map[uint32]slotSet)
	s.byOif = make(map[int]slotSet)
	s.byPrefsrc = make(map[netip.Addr]slotSet)
	for table := range s.rules {
		s.touchTable(table)
	}
}

func familyIndex(family uint8) (int, bool) {
	switch family {
	case unix.AF_INET:
		return 0, true
	case unix.AF_INET6:
		return 1, true
	}
	return 0, false
}

func (s *state) addRule(r *Rule) {
	for i := range s.rules[r.Table] {
		if s.rules[r.Table][i] == *r {
			return
		}
	}
	s.rules[r.Table] = append(s.rules[r.Table], *r)
	if f, ok := familyIndex(r.Family); ok {
		s.priorities[f][r.Priority]++
		if c := &s.lowest[f]; c.valid && r.Priority >= c.first && r.Priority <= c.last && (!c.found || r.Priority < c.value) {
			c.found, c.value = true, r.Priority
		}
	}
	s.touchTable(r.Table)
}

func (s *state) delRule(r *Rule) {
	rules := s.rules[r.Table]
	for i := range rules {
		if rules[i] != *r {
			continue
		}
		rules[i] = rules[len(rules)-1]
		if rules = rules[:len(rules)-1]; len(rules) == 0 {
			delete(s.rules, r.Table)
		} else {
			s.rules[r.Table] = rules
		}
		if f, ok := familyIndex(r.Family); ok {
			if s.priorities[f][r.Priority]--; s.priorities[f][r.Priority] <= 0 {
				delete(s.priorities[f], r.Priority)
				s.lowest[f].forget(r.Priority, s.priorities[f])
			}
		}
		s.touchTable(r.Table)
		return
	}
}

// touchTable keeps emptyRuled true for table after its rules or routes changed.
func (s *state) touchTable(table uint32) {
	if s.hasMarkedRule(table) && !s.hasMarkedRoute(table) {
		s.emptyRuled[table] = struct{}{}
		return
	}
	delete(s.emptyRuled, table)
}

func (s *state) hasMarkedRule(table uint32) bool {
	for i := range s.rules[table] {
		if s.rules[table][i].Protocol == s.mark {
			return true
		}
	}
	return false
}

func (s *state) hasMarkedRoute(table uint32) bool {
	for slot := range s.byTable[table] {
		for i := range s.routes[slot] {
			if s.routes[slot][i].Protocol == s.mark {
				return true
			}
		}
	}
	return false
}

func (s *state) addRoute(r *Route) {
	if !tracked(r) {
		return
	}
	slot := r.Slot()
	for i := range s.routes[slot] {
		if s.routes[slot][i] == *r {
			return
		}
	}
	s.routes[slot] = append(s.routes[slot], *r)
	s.index(slot, r)
}

// replaceRoute applies a route that replaced the first one of its slot.
func (s *state) replaceRoute(r *Route) {
	if !tracked(r) {
		return
	}
	slot := r.Slot()
	routes := s.routes[slot]
	for i := range routes {
		if routes[i] == *r {
			return
		}
	}
	if len(routes) == 0 {
		s.addRoute(r)
		return
	}
	old := routes[0]
	routes[0] = *r
	s.unindex(slot, &old)
	s.index(slot, r)
}

// delRoute removes the route equal to r, or failing that the one in its slot that most resembles it.
func (s *state) delRoute(r *Route) {
	if !tracked(r) {
		return
	}
	slot := r.Slot()
	routes := s.routes[slot]
	match := -1
	for i := range routes {
		if routes[i] == *r {
			match = i
			break
		}
		if match < 0 && routes[i].Oif == r.Oif && routes[i].Gw == r.Gw && routes[i].Protocol == r.Protocol {
			match = i
		}
	}
	if match < 0 {
		return
	}
	old := routes[match]
	copy(routes[match:], routes[match+1:])
	if routes = routes[:len(routes)-1]; len(routes) == 0 {
		delete(s.routes, slot)
	} else {
		s.routes[slot] = routes
	}
	s.unindex(slot, &old)
}

// dropOif forgets every route through the link.
func (s *state) dropOif(oif int) {
	var gone []Route
	for slot := range s.byOif[oif] {
		for _, r := range s.routes[slot] {
			if r.Oif == oif {
				gone = append(gone, r)
			}
		}
	}
	for i := range gone {
		s.delRoute(&gone[i])
	}
}

// tracked leaves out the local table, which holds a route per address and broadcast and nothing the
// forwarder decides on.
func tracked(r *Route) bool {
	return r.Table != unix.RT_TABLE_LOCAL
}

func (s *state) index(slot Slot, r *Route) {
	addToSet(s.byTable, slot.Table, slot)
	addToSet(s.byOif, r.Oif, slot)
	if r.Prefsrc.IsValid() {
		addToSet(s.byPrefsrc, r.Prefsrc, slot)
	}
	s.touchTable(slot.Table)
}

// unindex drops slot from the indexes of old where no route left in the slot still needs it.
func (s *state) unindex(slot Slot, old *Route) {
	var sameOif, samePrefsrc bool
	for _, r := range s.routes[slot] {
		sameOif = sameOif || r.Oif == old.Oif
		samePrefsrc = samePrefsrc || r.Prefsrc == old.Prefsrc
	}
	if len(s.routes[slot]) == 0 {
		removeFromSet(s.byTable, slot.Table, slot)
	}
	if !sameOif {
		removeFromSet(s.byOif, old.Oif, slot)
	}
	if !samePrefsrc && old.Prefsrc.IsValid() {
		removeFromSet(s.byPrefsrc, old.Prefsrc, slot)
	}
	s.touchTable(slot.Table)
}

func addToSet[K comparable](m map[K]slotSet, key K, slot Slot) {
	set, ok := m[key]
	if !ok {
		set = make(slotSet)
		m[key] = set
	}
	set[slot] = struct{}{}
}

func removeFromSet[K comparable](m map[K]slotSet, key K, slot Slot) {
	if set, ok := m[key]; ok {
		delete(set, slot)
		if len(set) == 0 {
			delete(m, key)
		}
	}
}
