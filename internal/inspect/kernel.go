package inspect

import (
	"fmt"
	"os"
	"sort"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/nsmfwd/forwarder-vpp/internal/kernel/netnsid"
	"github.com/nsmfwd/forwarder-vpp/internal/kernel/routeview"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/policyroute"
)

// namespace is one client namespace the journal names, opened by its recorded identity.
type namespace struct {
	url    string
	file   *os.File
	view   *routeview.View
	done   func()
	handle *netlink.Handle
	// accounted are the marked rules and routes some connection accounts for.
	accounted map[string]bool
}

// namespaces opens each namespace once and closes them all at the end.
type namespaces struct {
	registry *routeview.Registry
	byURL    map[string]*namespace
	status   map[string]string
}

func newNamespaces(mark uint8) *namespaces {
	return &namespaces{registry: routeview.NewRegistry(mark), byURL: map[string]*namespace{}, status: map[string]string{}}
}

// open returns the namespace with the recorded identity, or nil and why not.
func (n *namespaces) open(url string, identity netnsid.Identity, recorded bool) (*namespace, string) {
	if ns, ok := n.byURL[url]; ok {
		return ns, "present"
	}
	if status, ok := n.status[url]; ok {
		return nil, status
	}
	ns, status := n.openNew(url, identity, recorded)
	if ns != nil {
		n.byURL[url] = ns
	} else {
		n.status[url] = status
	}
	return ns, status
}

func (n *namespaces) openNew(url string, identity netnsid.Identity, recorded bool) (*namespace, string) {
	switch {
	case !recorded:
		return nil, "no identity recorded: never acted on"
	case !identity.Proven():
		return nil, "not provable (kernel without SO_NETNS_COOKIE)"
	}
	f, found, err := netnsid.Open(identity)
	switch {
	case err != nil:
		return nil, "unreadable: " + err.Error()
	case !found:
		return nil, "gone"
	}
	view, done, err := n.registry.Open(netnsid.FileURL(f))
	if err != nil {
		_ = f.Close()
		return nil, "unreadable: " + err.Error()
	}
	handle, err := netlink.NewHandleAt(netns.NsHandle(f.Fd()))
	if err != nil {
		done()
		_ = f.Close()
		return nil, "unreadable: " + err.Error()
	}
	return &namespace{url: url, file: f, view: view, done: done, handle: handle, accounted: map[string]bool{}}, "present"
}

func (n *namespaces) close() {
	for _, ns := range n.byURL {
		ns.handle.Close()
		ns.done()
		_ = ns.file.Close()
	}
	n.registry.Close()
}

// readSide fills k with the interface named in the namespace and the marked state through it.
func (ns *namespace) readSide(k *Kernel, first, count uint32) []string {
	index, up, err := ns.view.Link(k.Interface)
	if err != nil {
		return []string{fmt.Sprintf("no interface %s in %s", k.Interface, k.Netns)}
	}
	k.Index, k.Up = index, up
	if l, err := ns.handle.LinkByIndex(index); err == nil {
		k.MAC = l.Attrs().HardwareAddr.String()
		if addrs, err := ns.handle.AddrList(l, netlink.FAMILY_ALL); err == nil {
			for _, a := range addrs {
				k.Addresses = append(k.Addresses, a.IPNet.String())
			}
		}
	}
	tables := map[uint32][]string{}
	for route := range ns.view.MarkedVia(index) {
		ns.accounted[route.String()] = true
		if inRange(route.Table, first, count) {
			tables[route.Table] = append(tables[route.Table], route.String())
		} else {
			k.Routes = append(k.Routes, route.String())
		}
	}
	for table, routes := range tables {
		policy := PolicyTable{Table: table, Routes: routes}
		for _, rule := range ns.view.Rules(table) {
			if rule.Protocol == ns.view.Mark() {
				ns.accounted[rule.String()] = true
				policy.Rules = append(policy.Rules, rule.String())
			}
		}
		k.Policies = append(k.Policies, policy)
	}
	sort.Slice(k.Policies, func(a, b int) bool { return k.Policies[a].Table < k.Policies[b].Table })
	sort.Strings(k.Routes)
	return nil
}

// leftOver lists what in the namespace carries the mark but no connection accounted for, and what in
// the table range does not carry it.
func (ns *namespace) leftOver(first, count uint32) (orphans, foreign []Finding) {
	where := "namespace " + ns.url
	for table := range ns.view.Tables() {
		ours := inRange(table, first, count)
		for _, rule := range ns.view.Rules(table) {
			switch {
			case rule.Protocol == ns.view.Mark() && !ns.accounted[rule.String()]:
				orphans = append(orphans, Finding{Where: where, What: rule.String()})
			case rule.Protocol != ns.view.Mark() && ours:
				foreign = append(foreign, Finding{Where: where, What: rule.String()})
			}
		}
		for route := range ns.view.Routes(table) {
			switch {
			case route.Protocol == ns.view.Mark() && !ns.accounted[route.String()]:
				orphans = append(orphans, Finding{Where: where, What: route.String()})
			case route.Protocol != ns.view.Mark() && ours:
				foreign = append(foreign, Finding{Where: where, What: route.String()})
			}
		}
	}
	return orphans, foreign
}

func inRange(table, first, count uint32) bool {
	return table >= first && table-first < count
}

// tableRange is the forwarder's.
func tableRange() (first, count uint32) { return policyroute.DefaultTableRange() }
