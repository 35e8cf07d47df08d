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
// and the service by default), answered on port 53 on every address of the pod; names it does
// not hold are asked of the other endpoints' DNS servers, learnt over the peerings.
//
// Its clients are told one address of it (serveAt). With a VPP that is the address of the
// endpoint's connection to itself (self.go), as upstream's, and its own names point at that
// connection as at any client's. The kernel data plane makes no such connection (both of its
// ends would be one namespace): its address is the endpoint's own, and nameItself points the
// endpoint's names at it.
type vl3DNS struct {
	// configs are the other endpoints' DNS servers, filled by the peering client and the server.
	configs *genericsync.Map[string, []*networkservice.DNSConfig]
	server  networkservice.NetworkServiceServer
	// templates make the DNS names; selfRecords are the endpoint's own (kernel data plane).
	templates   []string
	selfRecords *genericsync.Map[string, []net.IP]
	// serverIP hands vl3dns its address; own is that address, also in the peering requests.
	serverIP chan net.IP
	own      net.IP
}

// dnsPort is where the endpoints' DNS servers listen, on every address of the pod: upstream's.
const dnsPort = 53

// newVl3DNS serves DNS on port until ctx ends. Its clients are refused (to retry) until it is
// given its address (serveAt).
func newVl3DNS(ctx context.Context, templates []string, port int) (*vl3DNS, error) {
	// vl3dns would panic on a bad template: say which variable is wrong instead.
	for _, text := range templates {
		if _, err := recordOf(text, &networkservice.Connection{}); err != nil {
			return nil, err
		}
	}
	d := &vl3DNS{
		configs:     new(genericsync.Map[string, []*networkservice.DNSConfig]),
		templates:   templates,
		selfRecords: new(genericsync.Map[string, []net.IP]),
		serverIP:    make(chan net.IP, 1),
	}
	d.server = vl3dns.NewServer(ctx, d.serverIP,
		vl3dns.WithDomainSchemes(templates...),
		vl3dns.WithConfigs(d.configs),
		vl3dns.WithDNSPort(port),
		// The endpoint's own names first (kernel data plane), then vl3dns's records and the
		// other endpoints.
		vl3dns.WithDNSListenAndServeFunc(func(ctx context.Context, handler dnsutils.Handler, listenOn string) {
			dnsutils.ListenAndServe(ctx, dnschain.NewDNSHandler(memory.NewDNSHandler(d.selfRecords), handler), listenOn)
		}),
	)
	return d, nil
}

// serveAt makes addr the DNS server address the endpoint's clients and peers are given; once
// only, before the peering (client) is made.
func (d *vl3DNS) serveAt(addr net.IP) {
	d.own = addr
	d.serverIP <- addr
}

// nameItself points the endpoint's own names (name as its podName, service) at its server
// address, for the data plane that makes no connection to itself.
func (d *vl3DNS) nameItself(name, service string) error {
	for _, text := range d.templates {
		record, err := recordOf(text, &networkservice.Connection{
			Labels: map[string]string{"podName": name}, NetworkService: service,
		})
		if err != nil {
			return err
		}
		d.selfRecords.Store(record, []net.IP{d.own})
	}
	return nil
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
