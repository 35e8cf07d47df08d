package requestcheck_test

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/count"
	"github.com/networkservicemesh/sdk/pkg/tools/log"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestcheck"
)

// fuzzLimits are small, so that generated Requests fall on both sides of every bound.
func fuzzLimits() requestcheck.Limits {
	limits := requestcheck.DefaultLimits()
	for _, limit := range []*requestcheck.Limit{
		&limits.MechanismPreferences, &limits.PathSegments, &limits.Labels, &limits.Addresses, &limits.Routes,
		&limits.Policies, &limits.PolicyRoutes, &limits.Prefixes, &limits.Neighbors, &limits.DNSEntries,
	} {
		limit.Max = 3
	}
	limits.LabelSize.Max = 16
	return limits
}

// FuzzRequestCheck feeds any protobuf-encoded Request to the element. It answers InvalidArgument
// naming the connection without passing the Request on, or passes on a Request within every
// bound whose namespaces are all inode URLs and whose addresses and routes parse.
func FuzzRequestCheck(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		data, err := proto.Marshal(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	limits := fuzzLimits()
	ctx := log.WithLog(context.Background(), log.Empty())
	f.Fuzz(func(t *testing.T, data []byte) {
		request := &networkservice.NetworkServiceRequest{}
		if proto.Unmarshal(data, request) != nil {
			return
		}
		counter := new(count.Server)
		_, err := chain.NewNetworkServiceServer(requestcheck.NewServer(requestcheck.WithLimits(limits)), counter).Request(ctx, request)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument || !namesTheConnection(status.Convert(err).Message(), request.GetConnection().GetId()) {
				t.Fatalf("refused with %v", err)
			}
			if counter.Requests() != 0 {
				t.Fatal("a refused Request was passed on")
			}
			return
		}
		if problem := violation(request, &limits); problem != "" {
			t.Fatalf("passed a Request with %s", problem)
		}
	})
}

// namesTheConnection is whether a refusal names the connection: whole, or by its start when the ID
// is itself beyond what the forwarder accepts.
func namesTheConnection(message, id string) bool {
	if len(id) <= 63 && !strings.ContainsRune(id, 0) {
		return strings.Contains(message, "connection "+id+":")
	}
	quoted := strconv.Quote(id[:min(len(id), 32)])
	return strings.HasPrefix(message, "connection "+strings.TrimSuffix(quoted, `"`))
}

// violation checks what an accepted Request promises, independently of the element's code.
func violation(request *networkservice.NetworkServiceRequest, limits *requestcheck.Limits) string {
	ipContext := request.GetConnection().GetContext().GetIpContext()
	if len(request.GetMechanismPreferences()) > limits.MechanismPreferences.Max ||
		len(ipContext.GetSrcIpAddrs()) > limits.Addresses.Max || len(ipContext.GetDstIpAddrs()) > limits.Addresses.Max ||
		len(ipContext.GetPolicies()) > limits.Policies.Max || len(request.GetConnection().GetLabels()) > limits.Labels.Max {
		return "a field over its bound"
	}
	conn := request.GetConnection()
	for _, id := range append([]string{conn.GetId()}, segmentStrings(conn)...) {
		if len(id) > 253 || strings.ContainsRune(id, 0) {
			return "an ID or name no tag holds"
		}
	}
	for _, segment := range conn.GetPath().GetPathSegments() {
		if len(segment.GetId()) > 63 {
			return "a path segment ID no tag holds"
		}
	}
	for _, policy := range ipContext.GetPolicies() {
		if len(policy.GetRoutes()) > limits.PolicyRoutes.Max {
			return "a policy over its bound"
		}
	}
	for _, mechanism := range append(request.GetMechanismPreferences(), request.GetConnection().GetMechanism()) {
		raw, present := mechanism.GetParameters()[common.InodeURL]
		if !present && kernel.ToMechanism(mechanism) != nil {
			return "a kernel mechanism without namespace"
		}
		if u, err := url.Parse(raw); present && (err != nil || u.Scheme != "inode") {
			return "a namespace URL " + raw
		}
	}
	for _, address := range append(ipContext.GetSrcIpAddrs(), ipContext.GetDstIpAddrs()...) {
		if _, _, err := net.ParseCIDR(address); err != nil {
			return "an address " + address
		}
	}
	for _, route := range append(ipContext.GetSrcRoutes(), ipContext.GetDstRoutes()...) {
		if _, _, err := net.ParseCIDR(route.GetPrefix()); err != nil {
			return "a route " + route.GetPrefix()
		}
	}
	return ""
}

func segmentStrings(conn *networkservice.Connection) []string {
	var out []string
	for _, segment := range conn.GetPath().GetPathSegments() {
		out = append(out, segment.GetId(), segment.GetName())
	}
	return out
}

func fuzzSeeds() []*networkservice.NetworkServiceRequest {
	valid := validRequest()
	byPath := validRequest()
	byPath.GetMechanismPreferences()[0].GetParameters()[kernel.NetNSURL] = "file:///proc/1/ns/net"
	selected := validRequest()
	selected.GetConnection().Mechanism = selected.GetMechanismPreferences()[0].Clone()
	withPolicies := validRequest()
	withPolicies.GetConnection().GetContext().GetIpContext().Policies = []*networkservice.PolicyRoute{
		{From: "172.16.0.1/32", Proto: "tcp", DstPort: "80-90", Routes: []*networkservice.Route{{Prefix: "10.0.0.0/8"}}},
	}
	labelled := validRequest()
	labelled.GetConnection().Labels = map[string]string{"app": "nsc", "a-rather-long-label-key": "v"}
	return []*networkservice.NetworkServiceRequest{valid, byPath, selected, withPolicies, labelled, {}}
}
