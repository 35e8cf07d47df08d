package main

import (
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// serverSet is the load balancer's real servers: the connections of every vl3 endpoint of the
// service whose labels carry the selector, by endpoint and connection ID, as each endpoint's
// connection monitor reports them (cmd-lb-vl3-vpp's selection).
type serverSet struct {
	selector map[string]string
	mu       sync.Mutex
	// byEndpoint maps a vl3 endpoint's name to its selected connections' addresses by ID.
	byEndpoint map[string]map[string]netip.Addr
}

func newServerSet(selector map[string]string) *serverSet {
	return &serverSet{selector: selector, byEndpoint: map[string]map[string]netip.Addr{}}
}

// apply takes one monitor event of endpoint nse: a selected connection that is deleted or
// down stops being a server, any other selected one is a server at its first source address.
// It says whether the servers changed.
func (s *serverSet) apply(nse string, event *networkservice.ConnectionEvent) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	servers := s.byEndpoint[nse]
	if servers == nil {
		servers = map[string]netip.Addr{}
		s.byEndpoint[nse] = servers
	}
	changed := false
	for id, conn := range event.GetConnections() {
		if !s.selects(conn) {
			continue
		}
		addr, ok := sourceAddr(conn)
		gone := event.GetType() == networkservice.ConnectionEventType_DELETE ||
			conn.GetState() == networkservice.State_DOWN || !ok
		old, had := servers[id]
		switch {
		case gone && had:
			delete(servers, id)
			changed = true
		case !gone && (!had || old != addr):
			servers[id] = addr
			changed = true
		}
	}
	if len(servers) == 0 {
		delete(s.byEndpoint, nse)
	}
	return changed
}

// dropEndpoint forgets every server of endpoint nse (its monitor stream ended: the endpoint is
// gone or unreachable) and says whether there were any.
func (s *serverSet) dropEndpoint(nse string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, had := s.byEndpoint[nse]
	delete(s.byEndpoint, nse)
	return had
}

// selects says whether conn carries every label of the selector, as a Kubernetes Service's
// selector does.
func (s *serverSet) selects(conn *networkservice.Connection) bool {
	for key, value := range s.selector {
		if got, ok := conn.GetLabels()[key]; !ok || got != value {
			return false
		}
	}
	return len(s.selector) > 0
}

// addresses are the servers' addresses, sorted, each once.
func (s *serverSet) addresses() []net.IP {
	s.mu.Lock()
	defer s.mu.Unlock()
	var addrs []netip.Addr
	for _, servers := range s.byEndpoint {
		for _, addr := range servers {
			addrs = append(addrs, addr)
		}
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	addrs = slices.Compact(addrs)
	ips := make([]net.IP, 0, len(addrs))
	for _, addr := range addrs {
		ips = append(ips, net.IP(addr.AsSlice()))
	}
	return ips
}

// sourceAddr is conn's first source address: the vl3 address of the client it serves.
func sourceAddr(conn *networkservice.Connection) (netip.Addr, bool) {
	srcs := conn.GetContext().GetIpContext().GetSrcIpAddrs()
	if len(srcs) == 0 {
		return netip.Addr{}, false
	}
	prefix, err := netip.ParsePrefix(srcs[0])
	if err != nil {
		return netip.Addr{}, false
	}
	return prefix.Addr(), true
}
