package main

import (
	"net"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/ipam/point2pointipam"
)

// ipamByFamily is one sdk point2pointipam server per address family of prefixes, IPv4 first, so
// that a list with both families (NSM_CIDR_PREFIX=172.16.1.100/31,2001:db8::/116) gives each
// side an address of each, as cmd-nse-icmp-responder does. One server for all would hand out a
// pair from the first prefix it can and stop there: IPv4 only. The prefixes of one family stay
// in one server, in order, so that excluding the first (SIGHUP, changes.go) moves a client to
// the next.
func ipamByFamily(prefixes []*net.IPNet) []networkservice.NetworkServiceServer {
	var v4, v6 []*net.IPNet
	for _, prefix := range prefixes {
		if prefix.IP.To4() != nil {
			v4 = append(v4, prefix)
		} else {
			v6 = append(v6, prefix)
		}
	}
	var servers []networkservice.NetworkServiceServer
	for _, family := range [][]*net.IPNet{v4, v6} {
		if len(family) > 0 {
			servers = append(servers, point2pointipam.NewServer(family...))
		}
	}
	return servers
}
