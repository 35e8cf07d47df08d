package expiry

import (
	"context"
	"net"

	"google.golang.org/grpc/peer"
)

// withoutDescriptors is ctx with the caller's peer stripped of its descriptor channel (grpcfd finds
// it as the peer's address): sdk's recvfd then leaves the namespace URLs as they are instead of
// waiting for a descriptor.
func withoutDescriptors(ctx context.Context) context.Context {
	p, ok := peer.FromContext(ctx)
	if !ok || p == nil {
		return ctx
	}
	plain := *p
	if p.Addr != nil {
		plain.Addr = address{network: p.Addr.Network(), address: p.Addr.String()}
	}
	return peer.NewContext(ctx, &plain)
}

// address names a peer as its address did, and is nothing else.
type address struct {
	network, address string
}

var _ net.Addr = address{}

func (a address) Network() string { return a.network }
func (a address) String() string  { return a.address }
