package policyroute

import (
	"fmt"
	"sort"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
)

// claim is what the kernel says about a candidate table from the point of view of one (connection, policy).
type claim int

const (
	// busy: something not provably ours is in the table (a foreign or differently-selecting rule, another
	// link's marked route, or an unmarked route in a table without our rule).
	busy claim = iota
	// free: no rule points at the table and it holds no route.
	free
	// ownedByRoutes: the table holds only our marked routes through this connection's link, and no rule.
	ownedByRoutes
	// ownedByRule: our marked rule with this policy's selector points at the table, whose marked routes all
	// go through this connection's link. Unmarked routes someone else put there are tolerated, never touched.
	ownedByRule
)

// plan is the minimal set of writes for one connection in one namespace.
type plan struct {
	routeWrites  []routeview.Op
	ruleAdds     []*routeview.Rule
	ruleDeletes  []routeview.Op
	routeDeletes []routeview.Op
	adopted      int
}

// ops orders writes so policy traffic always has a complete table: fill tables, point rules at them, and only
// then drop rules and routes that are no longer wanted.
func (p *plan) ops() []routeview.Op {
	ops := make([]routeview.Op, 0, len(p.routeWrites)+len(p.ruleAdds)+len(p.ruleDeletes)+len(p.routeDeletes))
	ops = append(ops, p.routeWrites...)
	// Descending priority puts each new rule at the head of the range, see priorities.
	sort.SliceStable(p.ruleAdds, func(i, j int) bool { return p.ruleAdds[i].Priority > p.ruleAdds[j].Priority })
	for _, rule := range p.ruleAdds {
		ops = append(ops, rule.AddOp())
	}
	ops = append(ops, p.ruleDeletes...)
	return append(ops, p.routeDeletes...)
}

// reconciler computes one connection's plan from the namespace's view.
type reconciler struct {
	opts    *options
	view    *routeview.View
	probes  *prober
	link    int
	claimed map[uint32]bool
}

func newReconciler(view *routeview.View, opts *options, connID string, link int) *reconciler {
	return &reconciler{opts: opts, view: view, probes: opts.prober(connID), link: link, claimed: make(map[uint32]bool)}
}

func (r *reconciler) isOurRule(rule *routeview.Rule) bool {
	return rule.Protocol == r.opts.protocol && rule.Plain
}

func (r *reconciler) isMarked(route *routeview.Route) bool {
	return route.Protocol == r.opts.protocol
}

func (r *reconciler) isOurRoute(route *routeview.Route) bool {
	return r.link != 0 && route.Oif == r.link && r.isMarked(route)
}

func (r *reconciler) hasOurRule(table uint32, sel selector) bool {
	rules := r.view.Rules(table)
	for i := range rules {
		if r.isOurRule(&rules[i]) && rules[i].Sel == sel {
			return true
		}
	}
	return false
}

func (r *reconciler) classify(table uint32, sel selector) claim {
	hasRule := false
	rules := r.view.Rules(table)
	for i := range rules {
		if !r.isOurRule(&rules[i]) || rules[i].Sel != sel {
			return busy
		}
		hasRule = true
	}
	hasRoutes := false
	for route := range r.view.Routes(table) {
		hasRoutes = true
		if r.isOurRoute(route) || hasRule && !r.isMarked(route) {
			continue
		}
		return busy
	}
	switch {
	case hasRule:
		return ownedByRule
	case hasRoutes:
		return ownedByRoutes
	default:
		return free
	}
}

// chooseTables gives every policy a table: first the candidates the kernel proves are already this policy's
// (our rule with its selector), then for the rest the first candidate that is free or holds only our routes.
// The choice depends only on the inputs and the kernel state, never on what this process remembers.
func (r *reconciler) chooseTables(policies []policy) ([]uint32, [][]uint32, error) {
	candidates := make([][]uint32, len(policies))
	chosen := make([]uint32, len(policies))
	for i := range policies {
		candidates[i] = r.probes.candidates(policies[i].sel)
		for _, t := range candidates[i] {
			if !r.claimed[t] && r.hasOurRule(t, policies[i].sel) && r.classify(t, policies[i].sel) == ownedByRule {
				chosen[i], r.claimed[t] = t, true
				break
			}
		}
	}
	for i := range policies {
		if chosen[i] != 0 {
			continue
		}
		for _, t := range candidates[i] {
			if !r.claimed[t] && r.classify(t, policies[i].sel) != busy {
				chosen[i], r.claimed[t] = t, true
				break
			}
		}
		if chosen[i] == 0 {
			return nil, nil, status.Errorf(codes.ResourceExhausted, "policies[%d]: none of its %d candidate routing tables is free", i, len(candidates[i]))
		}
	}
	return chosen, candidates, nil
}

// planPolicies diffs the chosen tables against their desired rules and routes.
func (r *reconciler) planPolicies(p *plan, policies []policy, tables []uint32) error {
	prio := newPriorities(r.view, r.opts)
	for i := range policies {
		r.planRules(p, prio, &policies[i], tables[i])
		if err := r.planRoutes(p, i, &policies[i], tables[i]); err != nil {
			return err
		}
	}
	return nil
}

// planRules keeps one of our rules per family of the policy in its table, whatever its priority within the
// range, and deletes the rest of ours there.
func (r *reconciler) planRules(p *plan, prio *priorities, pol *policy, table uint32) {
	missing := make(map[uint8]bool, len(pol.families))
	for _, family := range pol.families {
		missing[family] = true
	}
	rules := r.view.Rules(table)
	for j := range rules {
		actual := &rules[j]
		if missing[actual.Family] && actual.Sel == pol.sel && actual.Priority >= r.opts.firstPriority && actual.Priority <= r.opts.lastPriority() {
			missing[actual.Family] = false
			p.adopted++
			continue
		}
		p.ruleDeletes = append(p.ruleDeletes, actual.DeleteOp())
	}
	for _, family := range pol.families {
		if missing[family] {
			p.ruleAdds = append(p.ruleAdds, &routeview.Rule{Family: family, Sel: pol.sel, Table: table,
				Priority: prio.take(family), Protocol: r.opts.protocol, Plain: true})
		}
	}
}

// planRoutes writes the policy's routes that are missing or different and deletes our routes the policy no
// longer has. A route whose slot someone else's route holds fails the Request: replacing it would take
// over a route the forwarder did not install.
func (r *reconciler) planRoutes(p *plan, index int, pol *policy, table uint32) error {
	wanted := make(map[routeview.Slot]bool, len(pol.routes))
	for j, want := range pol.routes {
		desired := r.desiredRoute(table, want)
		slot := desired.Slot()
		wanted[slot] = true
		op, err := r.routeWrite(desired, r.view.RoutesAt(slot))
		if err != nil {
			return status.Errorf(codes.FailedPrecondition, "policies[%d].routes[%d]: %v", index, j, err)
		}
		if op == nil {
			p.adopted++
			continue
		}
		p.routeWrites = append(p.routeWrites, *op)
	}
	for route := range r.view.Routes(table) {
		if r.isOurRoute(route) && !wanted[route.Slot()] {
			p.routeDeletes = append(p.routeDeletes, route.DeleteOp())
		}
	}
	return nil
}

// routeWrite is the write that puts desired into a slot holding actual: none when it is there already, a
// replace of our own route, an exclusive add into an empty slot.
func (r *reconciler) routeWrite(desired *routeview.Route, actual []routeview.Route) (*routeview.Op, error) {
	for i := range actual {
		if !r.isOurRoute(&actual[i]) {
			return nil, foreignRouteError{desired: desired, foreign: &actual[i]}
		}
	}
	for i := range actual {
		if sameRoute(desired, &actual[i]) {
			return nil, nil
		}
	}
	op := desired.AddOp()
	if len(actual) > 0 {
		op = desired.ReplaceOp()
	}
	return &op, nil
}

// sameRoute compares what this element sets.
func sameRoute(desired, actual *routeview.Route) bool {
	return actual.Plain && actual.Oif == desired.Oif && actual.Gw == desired.Gw && actual.Onlink == desired.Onlink &&
		actual.Protocol == desired.Protocol && actual.Scope == desired.Scope
}

// desiredRoute gives every route of a table the table ID as its metric. The kernel hashes IPv4 next-hop info
// without the table but compares the table, so routes through one link with one metric in thousands of tables
// share a single hash chain and every insert walks all of them; a per-table metric spreads them out. Within a
// table all our routes have the same metric, so lookups are unaffected.
func (r *reconciler) desiredRoute(table uint32, want route) *routeview.Route {
	return &routeview.Route{Family: want.family, Table: table, Dst: want.dst, Gw: want.gw, Onlink: want.gw.IsValid(),
		Oif: r.link, Priority: table, Protocol: r.opts.protocol, Scope: unix.RT_SCOPE_UNIVERSE, Type: unix.RTN_UNICAST, Plain: true}
}

// planLeftovers removes what the kernel proves is this connection's but is no longer wanted:
//   - our routes through its link in tables it no longer uses, with our rules there unless other routes remain;
//   - our rules with one of its selectors on its probe sequence, in tables holding none of another link's routes;
//   - our rules looking up tables without a marked route, where the table is on the connection's probe sequence
//     for the rule's own selector: what an earlier context (other source addresses) left after the kernel
//     flushed the link's routes. Only such tables are examined, so the cost stays with the connection.
func (r *reconciler) planLeftovers(p *plan, policies []policy, candidates [][]uint32) {
	r.planLinkLeftovers(p)
	for i := range policies {
		for _, table := range candidates[i] {
			if !r.claimed[table] && r.hasOurRule(table, policies[i].sel) && r.classify(table, policies[i].sel) == ownedByRule {
				r.claimed[table] = true
				r.deleteOurRules(p, table)
			}
		}
	}
	probed := make(map[selector][]uint32)
	for _, table := range r.view.EmptyRuleTables() {
		if r.claimed[table] || !r.opts.inRange(table) {
			continue
		}
		rules := r.view.Rules(table)
		for j := range rules {
			if !r.isOurRule(&rules[j]) {
				continue
			}
			sequence, ok := probed[rules[j].Sel]
			if !ok {
				sequence = r.probes.candidates(rules[j].Sel)
				probed[rules[j].Sel] = sequence
			}
			if contains(sequence, table) {
				p.ruleDeletes = append(p.ruleDeletes, rules[j].DeleteOp())
			}
		}
	}
}

func (r *reconciler) planLinkLeftovers(p *plan) {
	if r.link == 0 {
		return
	}
	byTable := make(map[uint32]int)
	for route := range r.view.MarkedVia(r.link) {
		if r.opts.inRange(route.Table) && !r.claimed[route.Table] {
			byTable[route.Table]++
			p.routeDeletes = append(p.routeDeletes, route.DeleteOp())
		}
	}
	for table, ours := range byTable {
		if r.view.RouteCount(table) != ours {
			continue
		}
		r.claimed[table] = true
		r.deleteOurRules(p, table)
	}
}

func (r *reconciler) deleteOurRules(p *plan, table uint32) {
	rules := r.view.Rules(table)
	for i := range rules {
		if r.isOurRule(&rules[i]) {
			p.ruleDeletes = append(p.ruleDeletes, rules[i].DeleteOp())
		}
	}
}

// foreignRouteError is a desired route whose slot holds a route that is not this connection's.
type foreignRouteError struct {
	desired, foreign *routeview.Route
}

func (e foreignRouteError) Error() string {
	return fmt.Sprintf("%s would replace %s, which this connection did not install; it is left as it is", e.desired, e.foreign)
}
