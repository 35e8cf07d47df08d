package restore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// pathOf is a path whose segments are named and identified by pairs "name/id", with the
// forwarder at index 2 (nsc, nsmgr, forwarder, next hop...).
func pathOf(segments ...[2]string) *networkservice.Path {
	path := &networkservice.Path{Index: 2}
	for _, s := range segments {
		path.PathSegments = append(path.PathSegments, &networkservice.PathSegment{Name: s[0], Id: s[1], Token: "token-of-" + s[1]})
	}
	return path
}

var (
	nscSegment       = [2]string{"nsc", "nsc-1"}
	nsmgrSegment     = [2]string{"nsmgr-1", "nsmgr-conn-1"}
	forwarderSegment = [2]string{"forwarder-1", "fwd-conn-1"}
)

// A client that reselected while the forwarder was down comes back through it toward another
// endpoint: the old endpoint's connection is closed with the path that came back up to the
// forwarder (its tokens are current) and the old endpoint's segment after it.
func TestAReturningConnectionToAnotherEndpointClosesTheOldOne(t *testing.T) {
	previous := &networkservice.Connection{Id: "fwd-conn-1", NetworkService: "vl3", NetworkServiceEndpointName: "nse-a",
		Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment, [2]string{"nse-a", "nse-a-conn"})}
	for _, segment := range previous.GetPath().GetPathSegments() {
		segment.Token = "" // as the journal keeps it
	}
	now := &networkservice.Connection{Id: "fwd-conn-1", NetworkServiceEndpointName: "nse-b",
		Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment, [2]string{"nsmgr-2", "nsmgr-2-conn"}, [2]string{"nse-b", "nse-b-conn"})}

	closing := abandonedNextHop(previous, now, 2)

	require.NotNil(t, closing)
	require.Equal(t, "fwd-conn-1", closing.GetId())
	require.Equal(t, "nse-a", closing.GetNetworkServiceEndpointName())
	require.Equal(t, "vl3", closing.GetNetworkService())
	require.Equal(t, uint32(2), closing.GetPath().GetIndex())
	var got [][3]string
	for _, s := range closing.GetPath().GetPathSegments() {
		got = append(got, [3]string{s.GetName(), s.GetId(), s.GetToken()})
	}
	require.Equal(t, [][3]string{
		{"nsc", "nsc-1", "token-of-nsc-1"}, {"nsmgr-1", "nsmgr-conn-1", "token-of-nsmgr-conn-1"},
		{"forwarder-1", "fwd-conn-1", "token-of-fwd-conn-1"}, {"nse-a", "nse-a-conn", ""},
	}, got)
	require.Equal(t, "nse-b-conn", now.GetPath().GetPathSegments()[4].GetId(), "the Request's own path was changed")
}

// Nothing is closed where the connection still goes on, or where the record cannot say where it
// went.
func TestNoNextHopIsClosedThatTheConnectionStillUses(t *testing.T) {
	nextHopA := [2]string{"nse-a", "nse-a-conn"}
	previous := &networkservice.Connection{NetworkServiceEndpointName: "nse-a", Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment, nextHopA)}
	for name, c := range map[string]struct{ previous, now *networkservice.Connection }{
		"the same next hop's connection": {previous,
			&networkservice.Connection{Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment, nextHopA)}},
		"the old next hop's connection further on the path": {previous,
			&networkservice.Connection{Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment, [2]string{"passthrough", "p-1"}, nextHopA)}},
		"a record from before endpoint names were kept": {
			&networkservice.Connection{Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment, nextHopA)},
			&networkservice.Connection{Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment, [2]string{"nse-b", "nse-b-conn"})}},
		"another hop of this forwarder": {previous,
			&networkservice.Connection{Path: pathOf(nscSegment, nsmgrSegment, [2]string{"forwarder-1", "fwd-conn-2"}, [2]string{"nse-b", "nse-b-conn"})}},
		"no answer recorded": {nil,
			&networkservice.Connection{Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment, [2]string{"nse-b", "nse-b-conn"})}},
		"a path that ends at the forwarder": {previous,
			&networkservice.Connection{Path: pathOf(nscSegment, nsmgrSegment, forwarderSegment)}},
	} {
		t.Run(name, func(t *testing.T) {
			require.Nil(t, abandonedNextHop(c.previous, c.now, 2))
		})
	}
}
