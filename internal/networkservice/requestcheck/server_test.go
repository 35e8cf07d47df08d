package requestcheck_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/count"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestcheck"
)

func validRequest() *networkservice.NetworkServiceRequest {
	return &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{
			Id: "conn-1",
			Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
				SrcIpAddrs:  []string{"172.16.0.1/32", "fd00::1/128"},
				DstIpAddrs:  []string{"172.16.0.2/32"},
				SrcRoutes:   []*networkservice.Route{{Prefix: "172.16.0.2/32"}},
				DstRoutes:   []*networkservice.Route{{Prefix: "10.0.0.0/8", NextHop: "172.16.0.1"}},
				IpNeighbors: []*networkservice.IpNeighbor{{Ip: "172.16.0.2", HardwareAddress: "02:00:00:00:00:01"}},
			}},
		},
		MechanismPreferences: []*networkservice.Mechanism{{
			Cls:  cls.LOCAL,
			Type: kernel.MECHANISM,
			Parameters: map[string]string{
				kernel.NetNSURL:         "inode://4/4026531840",
				kernel.InterfaceNameKey: "nsm-1",
			},
		}},
	}
}

func TestValidRequestPasses(t *testing.T) {
	counter := new(count.Server)
	_, err := chain.NewNetworkServiceServer(requestcheck.NewServer(), counter).Request(context.Background(), validRequest())
	require.NoError(t, err)
	require.Equal(t, 1, counter.Requests())
}

func TestBadRequestsAreRefusedNamingTheField(t *testing.T) {
	for name, c := range map[string]struct {
		spoil    func(*networkservice.NetworkServiceRequest)
		mentions string
	}{
		"address without prefix": {func(r *networkservice.NetworkServiceRequest) {
			r.GetConnection().GetContext().GetIpContext().SrcIpAddrs[1] = "fd00::1"
		}, `context.ipContext.srcIpAddrs[1] "fd00::1"`},
		"garbage destination": {func(r *networkservice.NetworkServiceRequest) {
			r.GetConnection().GetContext().GetIpContext().DstIpAddrs[0] = "172.16.0.300/32"
		}, `context.ipContext.dstIpAddrs[0] "172.16.0.300/32"`},
		"route prefix": {func(r *networkservice.NetworkServiceRequest) {
			r.GetConnection().GetContext().GetIpContext().DstRoutes[0].Prefix = "10.0.0.0"
		}, `context.ipContext.dstRoutes[0]: prefix "10.0.0.0"`},
		"route next hop": {func(r *networkservice.NetworkServiceRequest) {
			r.GetConnection().GetContext().GetIpContext().DstRoutes[0].NextHop = "gateway"
		}, `context.ipContext.dstRoutes[0]: nextHop "gateway"`},
		"neighbour MAC": {func(r *networkservice.NetworkServiceRequest) {
			r.GetConnection().GetContext().GetIpContext().IpNeighbors[0].HardwareAddress = "02:00"
		}, `ipNeighbors[0].hardwareAddress "02:00"`},
		"interface name too long": {func(r *networkservice.NetworkServiceRequest) {
			r.GetMechanismPreferences()[0].GetParameters()[kernel.InterfaceNameKey] = "nsm-interface-16"
		}, `mechanismPreferences[0].parameters.name "nsm-interface-16"`},
		"interface name with slash": {func(r *networkservice.NetworkServiceRequest) {
			r.GetMechanismPreferences()[0].GetParameters()[kernel.InterfaceNameKey] = "nsm/1"
		}, `"nsm/1"`},
		"namespace URL scheme": {func(r *networkservice.NetworkServiceRequest) {
			r.GetMechanismPreferences()[0].GetParameters()[kernel.NetNSURL] = "/proc/1/ns/net"
		}, `mechanismPreferences[0].parameters.inodeURL "/proc/1/ns/net"`},
		"namespace by path": {func(r *networkservice.NetworkServiceRequest) {
			r.GetMechanismPreferences()[0].GetParameters()[kernel.NetNSURL] = "file:///proc/1/ns/net"
		}, `mechanismPreferences[0].parameters.inodeURL "file:///proc/1/ns/net"`},
		"namespace missing": {func(r *networkservice.NetworkServiceRequest) {
			delete(r.GetMechanismPreferences()[0].GetParameters(), kernel.NetNSURL)
		}, `mechanismPreferences[0].parameters.inodeURL is missing`},
		"selected mechanism": {func(r *networkservice.NetworkServiceRequest) {
			r.GetConnection().Mechanism = r.GetMechanismPreferences()[0].Clone()
			r.GetConnection().GetMechanism().GetParameters()[kernel.NetNSURL] = "http://x/y"
		}, `mechanism.parameters.inodeURL "http://x/y"`},
	} {
		t.Run(name, func(t *testing.T) {
			request := validRequest()
			c.spoil(request)
			counter := new(count.Server)
			_, err := chain.NewNetworkServiceServer(requestcheck.NewServer(), counter).Request(context.Background(), request)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			require.Contains(t, status.Convert(err).Message(), c.mentions)
			require.Contains(t, status.Convert(err).Message(), "conn-1")
			require.Zero(t, counter.Requests(), "a refused Request must not reach the elements that program anything")
		})
	}
}

func TestCloseIsNeverRefused(t *testing.T) {
	request := validRequest()
	request.GetConnection().GetContext().GetIpContext().SrcIpAddrs[0] = "bogus"
	counter := new(count.Server)
	_, err := chain.NewNetworkServiceServer(requestcheck.NewServer(), counter).Close(context.Background(), request.GetConnection())
	require.NoError(t, err)
	require.Equal(t, 1, counter.Closes())
}
