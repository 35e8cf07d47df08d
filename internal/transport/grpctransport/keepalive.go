package grpctransport

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
)

// Keepalive numbers. Cloud load balancers and NAT gateways drop TCP flows idle for 60 s (small NAT
// gateways) to 350 s (AWS NLB); an upstream monitor stream cut that way is reported downstream as
// DOWN and triggers a needless heal.
const (
	// ClientPingInterval is how often a client pings a quiet connection that carries a stream: well
	// under the shortest middlebox idle timeout above.
	ClientPingInterval = 30 * time.Second
	// ClientPingTimeout is how long a client waits for the ping's ack before it declares the
	// connection dead and lets the caller heal.
	ClientPingTimeout = 10 * time.Second
	// ServerPingInterval keeps server-initiated streams' connections (nsmgr's monitor streams to
	// the forwarder) warm from this side too: clients always accept pings.
	ServerPingInterval = 30 * time.Second
	// ServerPingTimeout is the server's ack deadline, as for clients.
	ServerPingTimeout = 10 * time.Second
	// ServerMinClientPingInterval is the enforcement floor. gRPC's default (5 min) would answer our
	// own clients' 30 s pings with GOAWAY too_many_pings after three strikes, tearing down the very
	// streams keepalive protects. Half the clients' interval leaves room for timer jitter.
	ServerMinClientPingInterval = ClientPingInterval / 2
)

// Keepalive holds the timings of both ends; production code uses DefaultKeepalive, tests scale it.
type Keepalive struct {
	ClientInterval    time.Duration
	ClientTimeout     time.Duration
	ServerInterval    time.Duration
	ServerTimeout     time.Duration
	ServerMinInterval time.Duration
}

// DefaultKeepalive is built from the constants above.
var DefaultKeepalive = Keepalive{
	ClientInterval:    ClientPingInterval,
	ClientTimeout:     ClientPingTimeout,
	ServerInterval:    ServerPingInterval,
	ServerTimeout:     ServerPingTimeout,
	ServerMinInterval: ServerMinClientPingInterval,
}

// DialOption makes a client ping while it has streams open. Without streams it stays silent:
// peers with gRPC's default enforcement (stock NSM components) would otherwise count strikes
// against idle connections and close them.
func (k Keepalive) DialOption() grpc.DialOption {
	return grpc.WithKeepaliveParams(keepalive.ClientParameters{
		Time:                k.ClientInterval,
		Timeout:             k.ClientTimeout,
		PermitWithoutStream: false,
	})
}

// ServerOptions make the server ping its clients and accept client pings down to
// ServerMinInterval, with or without open streams (other clients may ping idle connections).
func (k Keepalive) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: k.ServerInterval, Timeout: k.ServerTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: k.ServerMinInterval, PermitWithoutStream: true}),
	}
}
