package requestcheck_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// withPath gives r a path of two segments, the forwarder's last, as sdk's updatepath leaves it.
func withPath(r *networkservice.NetworkServiceRequest) *networkservice.NetworkServiceRequest {
	r.GetConnection().Path = &networkservice.Path{Index: 1, PathSegments: []*networkservice.PathSegment{
		{Id: "nsc-conn-1", Name: "nsc"}, {Id: r.GetConnection().GetId(), Name: "forwarder"},
	}}
	return r
}

// sdk-vpp tags every VPP interface with its connection's ID, and a VPP tag holds 63 bytes: the
// interfaces of a longer ID could never be told as this forwarder's again, after a restart or on
// a release. Every ID a side of the connection can carry is bounded to what a tag holds, names
// to a DNS name's length, and what exceeds them is refused before any element acts, naming the
// field without echoing the value whole.
func TestIDsThatATagCannotHoldAreRefused(t *testing.T) {
	for _, field := range []struct {
		name  string
		bound int
		set   func(r *networkservice.NetworkServiceRequest, value string)
	}{
		{"id", 63, func(r *networkservice.NetworkServiceRequest, value string) {
			r.GetConnection().Id = value
			r.GetConnection().GetPath().GetPathSegments()[1].Id = value
		}},
		{"path.pathSegments[0].id", 63, func(r *networkservice.NetworkServiceRequest, value string) {
			r.GetConnection().GetPath().GetPathSegments()[0].Id = value
		}},
		{"path.pathSegments[1].name", 253, func(r *networkservice.NetworkServiceRequest, value string) {
			r.GetConnection().GetPath().GetPathSegments()[1].Name = value
		}},
	} {
		t.Run(field.name, func(t *testing.T) {
			atBound := withPath(validRequest())
			field.set(atBound, strings.Repeat("a", field.bound))
			requests, err := requestThrough(t, atBound)
			require.NoError(t, err, "%d bytes fit", field.bound)
			require.Equal(t, 1, requests)

			over := withPath(validRequest())
			field.set(over, strings.Repeat("a", field.bound+1))
			requests, err = requestThrough(t, over)
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			message := status.Convert(err).Message()
			require.Contains(t, message, field.name+" ")
			require.Contains(t, message, fmt.Sprintf("bound of %d bytes", field.bound))
			require.NotContains(t, message, strings.Repeat("a", field.bound), "the error repeats the oversized value")
			require.Zero(t, requests, "an ID no tag can hold reached the elements that program")
		})
	}
}

// A NUL ends a VPP tag early: an ID holding one would be tagged as another ID.
func TestIDWithANulIsRefused(t *testing.T) {
	r := withPath(validRequest())
	r.GetConnection().GetPath().GetPathSegments()[0].Id = "calico-pod-1\x00suffix"
	requests, err := requestThrough(t, r)
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "path.pathSegments[0].id")
	require.Zero(t, requests)
}
