package policyroute

import (
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// claim is what the kernel says about a candidate table from the point of view of one (connection, policy).
type claim int

const (
	// busy: something not provably ours is in the table (a foreign or differently-selecting rule, a route that
	// is unmarked or leaves through another link).
	busy claim = iota
	// free: no rule points at the table and it holds no route.
	free
	// ownedByRoutes: the table holds only our marked routes through this connection's link, and no rule.
	ownedByRoutes
	// ownedByRule: our marked rule with this policy's selector points at the table, which holds nothing else
	// than our routes through this connection's link.
	ownedByRule
)

// plan is the minimal set of writes for one connection in one namespace.
type plan struct {
	routeReplaces []writeOp
	ruleAdds      []*kernelRule
	ruleDeletes   []writeOp
	routeDeletes  []writeOp
	adopted       int
}

// ops orders writes so policy traffic always has a complete table: fill tables, point rules at them, and only
// then drop rules and routes that are no longer wanted.
func (p *plan) ops() []writeOp {
	ops := make([]writeOp, 0, len(p.routeReplaces)+len(p.ruleAdds)+len(p.ruleDeletes)+len(p.routeDeletes))
	ops = append(ops, p.routeReplaces...)
	// Descending priority keeps each rule insert constant-time, see options.priority.
	sort.SliceStable(p.ruleAdds, func(i, j int) bool { return p.ruleAdds[i].priority > p.ruleAdds[j].priority })
	for _, rule := range p.ruleAdds {
		ops = append(ops, rule.addOp())
	}
	ops = append(ops, p.ruleDeletes...)
	return append(ops, p.routeDeletes...)
}

// reconciler computes one connection's plan from the kernel's rules and routes.
type reconciler struct {
	opts    *options
	link    int
	rules   map[uint32][]kernelRule
	view    *tableView
	claimed map[uint32]bool
}

func newReconciler(ns *namespace, opts *options, connID string, link int, policies []policy) (*reconciler, [][]uint32, error) {
	rules, err := ns.rtnl.dumpRules(opts)
	if err != nil {
		return nil, nil, err
	}
	r := &reconciler{opts: opts, link: link, rules: make(map[uint32][]kernelRule), claimed: make(map[uint32]bool)}
	for i := range rules {
		r.rules[rules[i].table] = append(r.rules[rules[i].table], rules[i])
	}
	candidates := make([][]uint32, len(policies))
	expectedTables := 0
	for i := range policies {
		candidates[i] = opts.candidateTables(connID, policies[i].sel)
		expectedTables += 1 + r.tablesWithSelector(candidates[i], policies[i].sel)
	}
	if r.view, err = newTableView(ns, opts, link, expectedTables); err != nil {
		return nil, nil, err
	}
	return r, candidates, nil
}

func (r *reconciler) tablesWithSelector(candidates []uint32, sel selector) int {
	n := 0
	for _, t := range candidates {
		if r.hasOurRule(t, sel) {
			n++
		}
	}
	return n
}

func (r *reconciler) hasOurRule(table uint32, sel selector) bool {
	for i := range r.rules[table] {
		if r.isOurs(&r.rules[table][i]) && r.rules[table][i].sel == sel {
			return true
		}
	}
	return false
}

func (r *reconciler) isOurs(rule *kernelRule) bool {
	return rule.protocol == r.opts.protocol && rule.plain
}

func (r *reconciler) classify(table uint32, sel selector) (claim, error) {
	hasRule := false
	for i := range r.rules[table] {
		if !r.isOurs(&r.rules[table][i]) || r.rules[table][i].sel != sel {
			return busy, nil
		}
		hasRule = true
	}
	routes, err := r.view.routes(table)
	if err != nil {
		return busy, err
	}
	for i := range routes {
		if !r.view.isLinkRoute(&routes[i]) {
			return busy, nil
		}
	}
	switch {
	case hasRule:
		return ownedByRule, nil
	case len(routes) > 0:
		return ownedByRoutes, nil
	default:
		return free, nil
	}
}

// chooseTables gives every policy a table: first the candidates the kernel proves are already this policy's
// (our rule with its selector), then for the rest the first candidate that is free or holds only our routes.
// The choice depends only on the inputs and the kernel state, never on what this process remembers.
func (r *reconciler) chooseTables(policies []policy, candidates [][]uint32) ([]uint32, error) {
	chosen := make([]uint32, len(policies))
	for i := range policies {
		sel := policies[i].sel
		for _, t := range candidates[i] {
			if r.claimed[t] || !r.hasOurRule(t, sel) {
				continue
			}
			c, err := r.classify(t, sel)
			if err != nil {
				return nil, err
			}
			if c == ownedByRule {
				chosen[i], r.claimed[t] = t, true
				break
			}
		}
	}
	for i := range policies {
		if chosen[i] != 0 {
			continue
		}
		sel := policies[i].sel
		for _, t := range candidates[i] {
			if r.claimed[t] {
				continue
			}
			c, err := r.classify(t, sel)
			if err != nil {
				return nil, err
			}
			if c != busy {
				chosen[i], r.claimed[t] = t, true
				break
			}
		}
		if chosen[i] == 0 {
			return nil, status.Errorf(codes.ResourceExhausted, "policies[%d]: none of its %d candidate routing tables is free", i, len(candidates[i]))
		}
	}
	return chosen, nil
}

// planPolicies diffs the chosen tables against their desired rules and routes.
func (r *reconciler) planPolicies(p *plan, policies []policy, tables []uint32) error {
	for i := range policies {
		table := tables[i]
		wantRules := make(map[ruleIdentity]*kernelRule, len(policies[i].families))
		for _, family := range policies[i].families {
			rule := &kernelRule{family: family, sel: policies[i].sel, table: table, priority: r.opts.priority(table), protocol: r.opts.protocol, plain: true}
			wantRules[rule.identity()] = rule
		}
		for j := range r.rules[table] {
			actual := &r.rules[table][j]
			if _, ok := wantRules[actual.identity()]; ok {
				delete(wantRules, actual.identity())
				p.adopted++
				continue
			}
			p.ruleDeletes = append(p.ruleDeletes, actual.deleteOp())
		}
		for _, family := range policies[i].families {
			rule := &kernelRule{family: family, sel: policies[i].sel, table: table, priority: r.opts.priority(table), protocol: r.opts.protocol, plain: true}
			if _, missing := wantRules[rule.identity()]; missing {
				p.ruleAdds = append(p.ruleAdds, rule)
			}
		}

		actualRoutes, err := r.view.routes(table)
		if err != nil {
			return err
		}
		actualByKey := make(map[routeIdentity]*kernelRoute, len(actualRoutes))
		for j := range actualRoutes {
			actualByKey[actualRoutes[j].identity()] = &actualRoutes[j]
		}
		for _, want := range policies[i].routes {
			desired := r.desiredRoute(table, want)
			actual, ok := actualByKey[desired.identity()]
			delete(actualByKey, desired.identity())
			if ok && actual.equal(desired) {
				p.adopted++
				continue
			}
			p.routeReplaces = append(p.routeReplaces, desired.replaceOp())
		}
		for _, stale := range actualByKey {
			p.routeDeletes = append(p.routeDeletes, stale.deleteOp())
		}
	}
	return nil
}

// desiredRoute gives every route of a table the table ID as its metric. The kernel hashes IPv4 next-hop info
// without the table but compares the table, so routes through one link with one metric in thousands of tables
// share a single hash chain and every insert walks all of them; a per-table metric spreads them out. Within a
// table all our routes have the same metric, so lookups are unaffected.
func (r *reconciler) desiredRoute(table uint32, want route) *kernelRoute {
	return &kernelRoute{family: want.family, table: table, dst: want.dst, gw: want.gw, oif: r.link,
		priority: int(table), protocol: r.opts.protocol, plain: true}
}

// planLeftovers removes what the kernel proves is this connection's but is no longer wanted: our routes through
// its link in tables it no longer uses (with our rules there, unless other routes remain), and our rules with
// one of its selectors on its probe sequence whose tables hold nothing but its routes.
func (r *reconciler) planLeftovers(p *plan, policies []policy, candidates [][]uint32) error {
	for table, routes := range r.view.linkRoutes {
		if r.claimed[table] {
			continue
		}
		for i := range routes {
			p.routeDeletes = append(p.routeDeletes, routes[i].deleteOp())
		}
		all, err := r.view.routes(table)
		if err != nil {
			return err
		}
		if len(all) != len(routes) {
			continue
		}
		r.claimed[table] = true
		for i := range r.rules[table] {
			if r.isOurs(&r.rules[table][i]) {
				p.ruleDeletes = append(p.ruleDeletes, r.rules[table][i].deleteOp())
			}
		}
	}
	for i := range policies {
		sel := policies[i].sel
		for _, table := range candidates[i] {
			if r.claimed[table] || !r.hasOurRule(table, sel) {
				continue
			}
			c, err := r.classify(table, sel)
			if err != nil {
				return err
			}
			if c != ownedByRule {
				continue
			}
			r.claimed[table] = true
			for j := range r.rules[table] {
				p.ruleDeletes = append(p.ruleDeletes, r.rules[table][j].deleteOp())
			}
		}
	}
	return nil
}
