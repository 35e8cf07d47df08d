package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"text/template"

	"github.com/edwarnicke/genericsync"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/connectioncontext/dnscontext/vl3dns"
	"github.com/networkservicemesh/sdk/pkg/tools/dnsutils"
	dnschain "github.com/networkservicemesh/sdk/pkg/tools/dnsutils/chain"
	"github.com/networkservicemesh/sdk/pkg/tools/dnsutils/memory"
	"github.com/networkservicemesh/sdk/pkg/tools/interdomain"
)

// vl3DNS is the endpoint's DNS server, sdk's vl3dns as in cmd-nse-vl3-vpp: every connection's
// source addresses under the names NSM_DNS_TEMPLATES make of it (the client's podName label
// and the service by default), answered on port 53 at the endpoint's own address; names it
// does not hold are asked of the other endpoints' DNS servers, learnt over the peerings.
//
// Upstream's endpoint gets its own name by a kernel connection to itself through the nsmgr and
// the forwarder (its own record is that connection's client address). This endpoint's data
// plane is its pod's kernel, where both ends of such a connection would share one namespace
// and one prefix; it answers its own name with its own address instead.
type vl3DNS struct {
	// configs are the other endpoints' DNS servers, filled by the peering client and the server.
	configs *genericsync.Map[string, []*networkservice.DNSConfig]
	server  networkservice.NetworkServiceServer
	// own is the endpoint's server address, also in its peering requests.
	own net.IP
}

// dnsPort is where the endpoints' DNS servers listen, on every address of the pod: upstream's.
const dnsPort = 53

// newVl3DNS serves DNS on port (at own, the endpoint's first address, among others) until ctx
// ends; name and service give the endpoint's own record.
func newVl3DNS(ctx context.Context, templates []string, own net.IP, name, service string, port int) (*vl3DNS, error) {
	selfRecords := new(genericsync.Map[string, []net.IP])
	for _, text := range templates {
		record, err := recordOf(text, &networkservice.Connection{
			Labels: map[string]string{"podName": name}, NetworkService: service,
		})
		if err != nil {
			return nil, err
		}
		selfRecords.Store(record, []net.IP{own})
	}
	serverIP := make(chan net.IP, 1)
	serverIP <- own
	d := &vl3DNS{configs: new(genericsync.Map[string, []*networkservice.DNSConfig]), own: own}
	d.server = vl3dns.NewServer(ctx, serverIP,
		vl3dns.WithDomainSchemes(templates...),
		vl3dns.WithConfigs(d.configs),
		vl3dns.WithDNSPort(port),
		// The endpoint's own names first, then vl3dns's records and the other endpoints.
		vl3dns.WithDNSListenAndServeFunc(func(ctx context.Context, handler dnsutils.Handler, listenOn string) {
			dnsutils.ListenAndServe(ctx, dnschain.NewDNSHandler(memory.NewDNSHandler(selfRecords), handler), listenOn)
		}),
	)
	return d, nil
}

// client is the peering connection's part: it names this endpoint's DNS server to the other
// endpoint, and keeps the other endpoint's for the names this one does not hold.
func (d *vl3DNS) client() networkservice.NetworkServiceClient {
	return vl3dns.NewClient(d.own, d.configs)
}

// recordOf is the DNS name a template gives conn, as vl3dns builds it (a trailing dot, no
// doubled dots).
func recordOf(text string, conn *networkservice.Connection) (string, error) {
	tmpl, err := template.New("dns").Funcs(template.FuncMap{
		"target": interdomain.Target, "domain": interdomain.Domain,
	}).Parse(text)
	if err != nil {
		return "", fmt.Errorf("NSM_DNS_TEMPLATES %q: %w", text, err)
	}
	var b strings.Builder
	if err = tmpl.Execute(&b, conn); err != nil {
		return "", fmt.Errorf("NSM_DNS_TEMPLATES %q: %w", text, err)
	}
	record := b.String()
	for strings.Contains(record, "..") {
		record = strings.ReplaceAll(record, "..", ".")
	}
	return record, nil
}
