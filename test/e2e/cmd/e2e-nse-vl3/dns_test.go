package main

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/metadata"
)

// The endpoint answers its own name (podName.service., as cmd-nse-vl3-vpp's default template)
// with its own address, each client's name with the client's address once it is connected,
// and PTR queries for both; a closed connection's name is gone.
func TestEndpointDNSAnswersItselfAndItsClients(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freeUDPPort(t)
	d, err := newVl3DNS(ctx, []string{`{{ index .Labels "podName" }}.{{ .NetworkService }}.`}, port)
	require.NoError(t, err)
	d.serveAt(net.ParseIP("172.16.0.0"))
	require.NoError(t, d.nameItself("nse-vl3-1", "vl3-dns"))
	server := fmt.Sprintf("127.0.0.1:%d", port)

	require.Eventually(t, func() bool {
		return answer(t, server, "nse-vl3-1.vl3-dns.", dns.TypeA) == "172.16.0.0"
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, "nse-vl3-1.vl3-dns.", answer(t, server, "0.0.16.172.in-addr.arpa.", dns.TypePTR))

	chain := next.NewNetworkServiceServer(metadata.NewServer(), d.server, &addressed{"172.16.0.1/32"})
	conn, err := chain.Request(ctx, &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id: "nsc-1", NetworkService: "vl3-dns", Labels: map[string]string{"podName": "nsc-vl3-1"},
		Context: &networkservice.ConnectionContext{},
	}})
	require.NoError(t, err)
	require.Equal(t, []*networkservice.DNSConfig{{DnsServerIps: []string{"172.16.0.0"}, SearchDomains: []string{"vl3-dns"}}},
		conn.GetContext().GetDnsContext().GetConfigs())
	require.Equal(t, "172.16.0.1", answer(t, server, "nsc-vl3-1.vl3-dns.", dns.TypeA))
	require.Equal(t, "nsc-vl3-1.vl3-dns.", answer(t, server, "1.0.16.172.in-addr.arpa.", dns.TypePTR))

	_, err = chain.Close(ctx, conn)
	require.NoError(t, err)
	require.Empty(t, answer(t, server, "nsc-vl3-1.vl3-dns.", dns.TypeA))
}

// With a VPP, the endpoint's own name is its connection to itself, as upstream's: that
// connection's Request comes before the server has an address (and gets no DNS config), its
// source address becomes the server's, and its name and address answer both ways.
func TestEndpointDNSNamesItselfByItsConnectionToItself(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freeUDPPort(t)
	d, err := newVl3DNS(ctx, []string{`{{ index .Labels "podName" }}.{{ .NetworkService }}.`}, port)
	require.NoError(t, err)
	server := fmt.Sprintf("127.0.0.1:%d", port)

	selfChain := next.NewNetworkServiceServer(metadata.NewServer(), d.server, &addressed{"172.16.0.1/32"})
	self, err := selfChain.Request(ctx, &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id: "nse-vl3-1-kernel", NetworkService: "vl3-dns", Labels: map[string]string{"podName": "nse-vl3-1"},
		Context: &networkservice.ConnectionContext{},
		Path: &networkservice.Path{PathSegments: []*networkservice.PathSegment{
			{Name: "nse-vl3-1"}, {Name: "nsmgr-1"}, {Name: "forwarder-1"}, {Name: "nse-vl3-1"},
		}, Index: 3},
	}})
	require.NoError(t, err)
	require.Empty(t, self.GetContext().GetDnsContext().GetConfigs())
	d.serveAt(self.GetContext().GetIpContext().GetSrcIPNets()[0].IP)

	require.Eventually(t, func() bool {
		return answer(t, server, "nse-vl3-1.vl3-dns.", dns.TypeA) == "172.16.0.1"
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, "nse-vl3-1.vl3-dns.", answer(t, server, "1.0.16.172.in-addr.arpa.", dns.TypePTR))

	// A client asking before the server has taken the address is told to retry (vl3dns's
	// "DNS address is initializing"), as sdk's retry client does.
	chain := next.NewNetworkServiceServer(metadata.NewServer(), d.server, &addressed{"172.16.0.2/32"})
	var conn *networkservice.Connection
	require.Eventually(t, func() bool {
		conn, err = chain.Request(ctx, &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
			Id: "nsc-1", NetworkService: "vl3-dns", Labels: map[string]string{"podName": "nsc-vl3-1"},
			Context: &networkservice.ConnectionContext{},
			Path: &networkservice.Path{PathSegments: []*networkservice.PathSegment{
				{Name: "nsc-vl3-1"}, {Name: "nsmgr-1"}, {Name: "forwarder-1"}, {Name: "nse-vl3-1"},
			}, Index: 3},
		}})
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, []*networkservice.DNSConfig{{DnsServerIps: []string{"172.16.0.1"}, SearchDomains: []string{"vl3-dns"}}},
		conn.GetContext().GetDnsContext().GetConfigs())

	_, err = selfChain.Close(ctx, self)
	require.NoError(t, err)
	require.Empty(t, answer(t, server, "nse-vl3-1.vl3-dns.", dns.TypeA))
}

// addressed stands for the vl3 server: it gives the connection its source address.
type addressed struct{ src string }

func (a *addressed) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	ipContext := &networkservice.IPContext{SrcIpAddrs: []string{a.src}}
	request.GetConnection().GetContext().IpContext = ipContext
	return next.Server(ctx).Request(ctx, request)
}

func (a *addressed) Close(ctx context.Context, conn *networkservice.Connection) (*emptypb.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// answer is the first answer's value to a query of name at server, "" for none.
func answer(t *testing.T, server, name string, qtype uint16) string {
	t.Helper()
	msg := new(dns.Msg)
	msg.SetQuestion(name, qtype)
	resp, _, err := new(dns.Client).Exchange(msg, server)
	if err != nil || len(resp.Answer) == 0 {
		return ""
	}
	switch rr := resp.Answer[0].(type) {
	case *dns.A:
		return rr.A.String()
	case *dns.PTR:
		return rr.Ptr
	}
	return resp.Answer[0].String()
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	return conn.LocalAddr().(*net.UDPAddr).Port
}
