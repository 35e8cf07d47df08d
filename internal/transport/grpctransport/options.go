package grpctransport

import (
	"crypto/tls"
	"time"

	"github.com/edwarnicke/grpcfd"
	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/networkservicemesh/sdk/pkg/tools/spiffejwt"
	"github.com/networkservicemesh/sdk/pkg/tools/token"
	"github.com/networkservicemesh/sdk/pkg/tools/tracing"

	"github.com/nsmfwd/forwarder-vpp/internal/transport/fdtransport"
)

// Identity is what the transport needs from the SVID source.
type Identity interface {
	x509svid.Source
	x509bundle.Source
}

// TokenGenerator returns the generator that signs path segments and per-call credentials with the
// forwarder's SVID.
func TokenGenerator(identity Identity, maxTokenLifetime time.Duration) token.GeneratorFunc {
	return spiffejwt.TokenGeneratorFunc(identity, maxTokenLifetime)
}

// DialOptions are the options of every client dial: mTLS with the SVID (peers of any SPIFFE ID
// in the trust bundle; OPA decides per request), fd passing, per-call tokens, tracing, keepalive.
//
// Dials block until the peer is ready, as the stock forwarder's do, so the sdk's dial timeout
// (NSM_DIAL_TIMEOUT) bounds how long a dead peer can hold a call: the sdk's dial element dials the
// old next hop again to close the path through it, and a non-blocking dial would leave that Close
// waiting for the dead peer (WaitForReady) until the heal's own deadline. Unlike the stock
// forwarder's, a dial that is refused fails at once instead of retrying until the dial timeout.
// WaitForReady stays for calls on a live connection that is briefly reconnecting.
//
// fdOptions configure descriptor passing; pass the server's fdtransport.WithBudget here too, so
// that the caps on descriptors held count a peer's across both directions.
func DialOptions(identity Identity, tokens token.GeneratorFunc, ka Keepalive, fdOptions ...fdtransport.Option) []grpc.DialOption {
	tlsConfig := tlsconfig.MTLSClientConfig(identity, identity, tlsconfig.AuthorizeAny())
	tlsConfig.MinVersion = tls.VersionTLS12
	return append(tracing.WithTracingDial(),
		// Both deprecated for grpc.NewClient only: the sdk dials with grpc.DialContext, where they
		// hold in 1.x. A peer that refuses (a killed process's socket) ends the dial at once.
		grpc.WithBlock(),
		grpc.FailOnNonTempDialError(true),
		grpc.WithDefaultCallOptions(
			grpc.WaitForReady(true),
			grpc.PerRPCCredentials(token.NewPerRPCCredentials(tokens)),
		),
		grpc.WithTransportCredentials(fdtransport.TransportCredentials(credentials.NewTLS(tlsConfig), fdOptions...)),
		grpcfd.WithChainStreamInterceptor(),
		grpcfd.WithChainUnaryInterceptor(),
		ka.DialOption(),
	)
}

// ServerOptions are the options of the forwarder's gRPC server: mTLS with the SVID, fd passing,
// tracing, keepalive with an enforcement policy that accepts the clients' pings. Descriptors a
// client sends are held only once its handshake is done, within the caps of fdOptions' budget.
func ServerOptions(identity Identity, ka Keepalive, fdOptions ...fdtransport.Option) []grpc.ServerOption {
	tlsConfig := tlsconfig.MTLSServerConfig(identity, identity, tlsconfig.AuthorizeAny())
	tlsConfig.MinVersion = tls.VersionTLS12
	options := append(tracing.WithTracing(), grpc.Creds(fdtransport.TransportCredentials(credentials.NewTLS(tlsConfig), fdOptions...)))
	return append(options, ka.ServerOptions()...)
}
