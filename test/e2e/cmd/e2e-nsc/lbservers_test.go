package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

func serverConn(id, addr string, state networkservice.State, labels map[string]string) *networkservice.Connection {
	return &networkservice.Connection{
		Id:     id,
		State:  state,
		Labels: labels,
		Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
			SrcIpAddrs: []string{addr + "/32"},
		}},
	}
}

func event(kind networkservice.ConnectionEventType, conns ...*networkservice.Connection) *networkservice.ConnectionEvent {
	e := &networkservice.ConnectionEvent{Type: kind, Connections: map[string]*networkservice.Connection{}}
	for _, c := range conns {
		e.Connections[c.GetId()] = c
	}
	return e
}

var finance = map[string]string{"app": "finance"}

func TestServersOfAnEndpointAreItsSelectedConnectionsThatAreUp(t *testing.T) {
	s := newServerSet(finance)
	s.apply("nse-vl3", event(networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER,
		serverConn("a", "172.16.0.2", networkservice.State_UP, map[string]string{"app": "finance", "podName": "finance-server-1"}),
		serverConn("b", "172.16.0.3", networkservice.State_UP, map[string]string{"podName": "finance-client"}),
		serverConn("c", "172.16.0.4", networkservice.State_DOWN, finance),
		serverConn("d", "172.16.0.5", networkservice.State_UP, map[string]string{"app": "accounting"}),
	))
	require.Equal(t, []net.IP{net.ParseIP("172.16.0.2").To4()}, s.addresses())
}

func TestServersGoOnDeleteAndDownAndWithTheirEndpoint(t *testing.T) {
	s := newServerSet(finance)
	s.apply("nse-1", event(networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER,
		serverConn("a", "172.16.0.2", networkservice.State_UP, finance),
		serverConn("b", "172.16.0.3", networkservice.State_UP, finance)))
	s.apply("nse-2", event(networkservice.ConnectionEventType_UPDATE,
		serverConn("c", "172.16.1.2", networkservice.State_UP, finance)))
	require.Len(t, s.addresses(), 3)

	s.apply("nse-1", event(networkservice.ConnectionEventType_DELETE, serverConn("a", "172.16.0.2", networkservice.State_UP, finance)))
	s.apply("nse-1", event(networkservice.ConnectionEventType_UPDATE, serverConn("b", "172.16.0.3", networkservice.State_DOWN, finance)))
	require.Equal(t, []net.IP{net.ParseIP("172.16.1.2").To4()}, s.addresses())

	s.apply("nse-1", event(networkservice.ConnectionEventType_UPDATE, serverConn("b", "172.16.0.9", networkservice.State_UP, finance)))
	require.Equal(t, []net.IP{net.ParseIP("172.16.0.9").To4(), net.ParseIP("172.16.1.2").To4()}, s.addresses())

	s.dropEndpoint("nse-2")
	require.Equal(t, []net.IP{net.ParseIP("172.16.0.9").To4()}, s.addresses())
}

func TestEverySelectorLabelMustMatch(t *testing.T) {
	s := newServerSet(map[string]string{"app": "finance", "tier": "web"})
	s.apply("nse-1", event(networkservice.ConnectionEventType_INITIAL_STATE_TRANSFER,
		serverConn("a", "172.16.0.2", networkservice.State_UP, map[string]string{"app": "finance"}),
		serverConn("b", "172.16.0.3", networkservice.State_UP, map[string]string{"app": "finance", "tier": "web"})))
	require.Equal(t, []net.IP{net.ParseIP("172.16.0.3").To4()}, s.addresses())
}

func TestAnUnchangedEventDoesNotChangeTheServers(t *testing.T) {
	s := newServerSet(finance)
	up := event(networkservice.ConnectionEventType_UPDATE, serverConn("a", "172.16.0.2", networkservice.State_UP, finance))
	require.True(t, s.apply("nse-1", up))
	require.False(t, s.apply("nse-1", up), "a refresh of the same server is no change")
	require.False(t, s.dropEndpoint("nse-9"))
}
