package requestcheck_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/count"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestcheck"
)

// grow makes one repeated field of r hold n valid entries.
type grow func(r *networkservice.NetworkServiceRequest, n int)

func ipContext(r *networkservice.NetworkServiceRequest) *networkservice.IPContext {
	return r.GetConnection().GetContext().GetIpContext()
}

func addresses(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.%d.1/32", i/256, i%256)
	}
	return out
}

func routes(n int) []*networkservice.Route {
	out := make([]*networkservice.Route, n)
	for i, prefix := range addresses(n) {
		out[i] = &networkservice.Route{Prefix: prefix}
	}
	return out
}

func entries(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("key-%d", i)] = "value"
	}
	return out
}

// boundedFields are every bounded field, the limit that bounds it and how to fill it.
func boundedFields(limits *requestcheck.Limits) []struct {
	field string
	limit requestcheck.Limit
	grow  grow
} {
	return []struct {
		field string
		limit requestcheck.Limit
		grow  grow
	}{
		{"mechanismPreferences", limits.MechanismPreferences, func(r *networkservice.NetworkServiceRequest, n int) {
			template := r.GetMechanismPreferences()[0]
			r.MechanismPreferences = nil
			for range n {
				r.MechanismPreferences = append(r.MechanismPreferences, template.Clone())
			}
		}},
		{"path.pathSegments", limits.PathSegments, func(r *networkservice.NetworkServiceRequest, n int) {
			r.GetConnection().Path = &networkservice.Path{}
			for i := range n {
				r.GetConnection().GetPath().PathSegments = append(r.GetConnection().GetPath().PathSegments, &networkservice.PathSegment{Id: fmt.Sprint(i)})
			}
		}},
		{"labels", limits.Labels, func(r *networkservice.NetworkServiceRequest, n int) { r.GetConnection().Labels = entries(n) }},
		{"context.extraContext", limits.Labels, func(r *networkservice.NetworkServiceRequest, n int) {
			r.GetConnection().GetContext().ExtraContext = entries(n)
		}},
		{"mechanismPreferences[0].parameters", limits.Labels, func(r *networkservice.NetworkServiceRequest, n int) {
			parameters := r.GetMechanismPreferences()[0].GetParameters()
			for key, value := range entries(n - len(parameters)) {
				parameters[key] = value
			}
		}},
		{"path.pathSegments[0].metrics", limits.Labels, func(r *networkservice.NetworkServiceRequest, n int) {
			r.GetConnection().Path = &networkservice.Path{PathSegments: []*networkservice.PathSegment{{Metrics: entries(n)}}}
		}},
		{"context.ipContext.srcIpAddrs", limits.Addresses, func(r *networkservice.NetworkServiceRequest, n int) { ipContext(r).SrcIpAddrs = addresses(n) }},
		{"context.ipContext.dstIpAddrs", limits.Addresses, func(r *networkservice.NetworkServiceRequest, n int) { ipContext(r).DstIpAddrs = addresses(n) }},
		{"context.ipContext.srcRoutes", limits.Routes, func(r *networkservice.NetworkServiceRequest, n int) { ipContext(r).SrcRoutes = routes(n) }},
		{"context.ipContext.dstRoutes", limits.Routes, func(r *networkservice.NetworkServiceRequest, n int) { ipContext(r).DstRoutes = routes(n) }},
		{"context.ipContext.policies", limits.Policies, func(r *networkservice.NetworkServiceRequest, n int) {
			ipContext(r).Policies = make([]*networkservice.PolicyRoute, n)
			for i := range n {
				ipContext(r).Policies[i] = &networkservice.PolicyRoute{Proto: "6", DstPort: fmt.Sprint(i + 1)}
			}
		}},
		{"context.ipContext.policies[0].routes", limits.PolicyRoutes, func(r *networkservice.NetworkServiceRequest, n int) {
			ipContext(r).Policies = []*networkservice.PolicyRoute{{Routes: routes(n)}}
		}},
		{"context.ipContext.excludedPrefixes", limits.Prefixes, func(r *networkservice.NetworkServiceRequest, n int) { ipContext(r).ExcludedPrefixes = addresses(n) }},
		{"context.ipContext.extraPrefixes", limits.Prefixes, func(r *networkservice.NetworkServiceRequest, n int) { ipContext(r).ExtraPrefixes = addresses(n) }},
		{"context.ipContext.extraPrefixRequest", limits.Prefixes, func(r *networkservice.NetworkServiceRequest, n int) {
			ipContext(r).ExtraPrefixRequest = make([]*networkservice.ExtraPrefixRequest, n)
			for i := range n {
				ipContext(r).ExtraPrefixRequest[i] = &networkservice.ExtraPrefixRequest{PrefixLen: 32, RequiredNumber: 1}
			}
		}},
		{"context.ipContext.ipNeighbors", limits.Neighbors, func(r *networkservice.NetworkServiceRequest, n int) {
			ipContext(r).IpNeighbors = make([]*networkservice.IpNeighbor, n)
			for i, address := range addresses(n) {
				ipContext(r).IpNeighbors[i] = &networkservice.IpNeighbor{Ip: strings.TrimSuffix(address, "/32"), HardwareAddress: "02:00:00:00:00:01"}
			}
		}},
		{"context.dnsContext.configs", limits.DNSEntries, func(r *networkservice.NetworkServiceRequest, n int) {
			r.GetConnection().GetContext().DnsContext = &networkservice.DNSContext{Configs: make([]*networkservice.DNSConfig, n)}
			for i := range n {
				r.GetConnection().GetContext().GetDnsContext().Configs[i] = &networkservice.DNSConfig{}
			}
		}},
		{"context.dnsContext.configs[0].dnsServerIps", limits.DNSEntries, func(r *networkservice.NetworkServiceRequest, n int) {
			r.GetConnection().GetContext().DnsContext = &networkservice.DNSContext{Configs: []*networkservice.DNSConfig{{DnsServerIps: addresses(n)}}}
		}},
		{"context.dnsContext.configs[0].searchDomains", limits.DNSEntries, func(r *networkservice.NetworkServiceRequest, n int) {
			r.GetConnection().GetContext().DnsContext = &networkservice.DNSContext{Configs: []*networkservice.DNSConfig{{SearchDomains: addresses(n)}}}
		}},
	}
}

func requestThrough(t *testing.T, request *networkservice.NetworkServiceRequest, opts ...requestcheck.Option) (requests int, err error) {
	t.Helper()
	counter := new(count.Server)
	_, err = chain.NewNetworkServiceServer(requestcheck.NewServer(opts...), counter).Request(context.Background(), request)
	return counter.Requests(), err
}

// Every bounded field takes exactly its bound and is refused one entry beyond it, with an
// InvalidArgument naming the field, the bound and the setting that raises it.
func TestEveryRepeatedFieldIsBoundedByDefault(t *testing.T) {
	limits := requestcheck.DefaultLimits()
	for _, bounded := range boundedFields(&limits) {
		t.Run(bounded.field, func(t *testing.T) {
			atBound := validRequest()
			bounded.grow(atBound, bounded.limit.Max)
			requests, err := requestThrough(t, atBound)
			require.NoError(t, err, "%d entries are within the bound", bounded.limit.Max)
			require.Equal(t, 1, requests)

			over := validRequest()
			bounded.grow(over, bounded.limit.Max+1)
			requests, err = requestThrough(t, over)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			message := status.Convert(err).Message()
			require.Contains(t, message, bounded.field+" has ")
			require.Contains(t, message, fmt.Sprintf("bound of %d (%s)", bounded.limit.Max, bounded.limit.Setting))
			require.Zero(t, requests, "an oversized Request must not reach the elements that program anything")
		})
	}
}

func TestLimitsAreConfigurable(t *testing.T) {
	limits := requestcheck.DefaultLimits()
	limits.Addresses.Max = 1
	_, err := requestThrough(t, validRequest(), requestcheck.WithLimits(limits))
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "context.ipContext.srcIpAddrs has 2 entries, more than the bound of 1 (NSM_MAX_REQUEST_ADDRESSES)")

	limits.Addresses.Max = 2
	_, err = requestThrough(t, validRequest(), requestcheck.WithLimits(limits))
	require.NoError(t, err)
}

func TestOversizedLabelIsRefusedWithoutEchoingIt(t *testing.T) {
	limits := requestcheck.DefaultLimits()
	for name, spoil := range map[string]func(r *networkservice.NetworkServiceRequest, size int){
		"key": func(r *networkservice.NetworkServiceRequest, size int) {
			r.GetConnection().Labels = map[string]string{strings.Repeat("k", size): "v"}
		},
		"value": func(r *networkservice.NetworkServiceRequest, size int) {
			r.GetConnection().Labels = map[string]string{"k": strings.Repeat("v", size)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			atBound := validRequest()
			spoil(atBound, limits.LabelSize.Max)
			_, err := requestThrough(t, atBound)
			require.NoError(t, err)

			over := validRequest()
			spoil(over, limits.LabelSize.Max+1)
			requests, err := requestThrough(t, over)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			message := status.Convert(err).Message()
			require.Contains(t, message, `labels entry "k`)
			require.Contains(t, message, fmt.Sprintf("bound of %d bytes (NSM_MAX_REQUEST_LABEL_SIZE)", limits.LabelSize.Max))
			require.Less(t, len(message), 300, "the error must not repeat the oversized entry")
			require.Zero(t, requests)
		})
	}
}
