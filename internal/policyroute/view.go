package policyroute

import (
	"github.com/vishvananda/netlink"
)

// bulkThreshold is the number of tables above which one dump of every table is cheaper than a dump per table.
const bulkThreshold = 64

// tableView holds the routes of candidate tables, read from the kernel at most once per reconciliation.
type tableView struct {
	ns   *namespace
	opts *options
	link int
	// loaded maps a table to all its routes; with complete set, a table missing from it is empty.
	loaded   map[uint32][]kernelRoute
	complete bool
	// linkRoutes are this connection's marked routes (through its link) in every table of the range.
	linkRoutes map[uint32][]kernelRoute
}

// newTableView reads either every route of the range (when many tables will be inspected) or only the marked
// routes through the connection's link, leaving other tables to be read one by one on demand.
func newTableView(ns *namespace, opts *options, link, expectedTables int) (*tableView, error) {
	v := &tableView{ns: ns, opts: opts, link: link, loaded: make(map[uint32][]kernelRoute), linkRoutes: make(map[uint32][]kernelRoute)}
	if expectedTables > bulkThreshold {
		all, err := ns.listRoutes(opts, &netlink.Route{}, 0)
		if err != nil {
			return nil, err
		}
		for _, r := range all {
			v.loaded[r.table] = append(v.loaded[r.table], r)
			if v.isLinkRoute(&r) {
				v.linkRoutes[r.table] = append(v.linkRoutes[r.table], r)
			}
		}
		v.complete = true
		return v, nil
	}
	if link == 0 {
		return v, nil
	}
	filter := &netlink.Route{LinkIndex: link, Protocol: netlink.RouteProtocol(opts.protocol)}
	own, err := ns.listRoutes(opts, filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return nil, err
	}
	for _, r := range own {
		v.linkRoutes[r.table] = append(v.linkRoutes[r.table], r)
	}
	return v, nil
}

func (v *tableView) isLinkRoute(r *kernelRoute) bool {
	return v.link != 0 && r.oif == v.link && r.protocol == v.opts.protocol
}

func (v *tableView) routes(table uint32) ([]kernelRoute, error) {
	if routes, ok := v.loaded[table]; ok || v.complete {
		return routes, nil
	}
	routes, err := v.ns.listRoutes(v.opts, &netlink.Route{Table: int(table)}, 0)
	if err != nil {
		return nil, err
	}
	v.loaded[table] = routes
	return routes, nil
}
