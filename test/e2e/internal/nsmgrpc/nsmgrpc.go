package nsmgrpc

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/edwarnicke/grpcfd"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/workloadapi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/networkservicemesh/sdk/pkg/tools/spiffejwt"
	"github.com/networkservicemesh/sdk/pkg/tools/token"
)

// keepaliveTime keeps idle control-plane streams from being cut by anything
// in between; the server's enforcement must accept this rate.
const keepaliveTime = 20 * time.Second

// newSource fetches the workload's X.509 SVID from the workload API named by
// SPIFFE_ENDPOINT_SOCKET and keeps it rotated until ctx ends.
func newSource(ctx context.Context, timeout time.Duration) (*workloadapi.X509Source, error) {
	fetchCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	source, err := workloadapi.NewX509Source(fetchCtx)
	if err != nil {
		return nil, fmt.Errorf("no X.509 SVID from the workload API within %s: %w", timeout, err)
	}
	return source, nil
}

// tokenGenerator signs the per-hop path tokens with the workload's SVID.
func tokenGenerator(source *workloadapi.X509Source, maxLifetime time.Duration) token.GeneratorFunc {
	return spiffejwt.TokenGeneratorFunc(source, maxLifetime)
}

// serverOptions are the options of every harness gRPC server.
func serverOptions(source *workloadapi.X509Source) []grpc.ServerOption {
	tlsConfig := tlsconfig.MTLSServerConfig(source, source, tlsconfig.AuthorizeAny())
	tlsConfig.MinVersion = tls.VersionTLS12
	return []grpc.ServerOption{
		grpc.Creds(grpcfd.TransportCredentials(credentials.NewTLS(tlsConfig))),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveTime / 2, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: keepaliveTime, Timeout: keepaliveTime}),
	}
}

// dialOptions are the options of the harness's gRPC clients but nsmgr's (as
// cmd-nsc's: calls wait for the peer to be ready); each call carries a fresh
// token from generate.
func dialOptions(source *workloadapi.X509Source, generate token.GeneratorFunc) []grpc.DialOption {
	return append(commonDialOptions(source),
		grpc.WithDefaultCallOptions(
			grpc.WaitForReady(true),
			grpc.PerRPCCredentials(token.NewPerRPCCredentials(generate)),
		))
}

// nsmgrDialOptions are the nsmgr's, as cmd-nsmgr v1.18 dials: blocking, so
// that its dial timeout bounds how long a dead forwarder or endpoint holds a
// heal, and calls that fail at once on a peer that is not ready.
func nsmgrDialOptions(source *workloadapi.X509Source, generate token.GeneratorFunc) []grpc.DialOption {
	return append(commonDialOptions(source),
		// Deprecated for grpc.NewClient only: the sdk dials with grpc.DialContext.
		grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.PerRPCCredentials(token.NewPerRPCCredentials(generate))))
}

func commonDialOptions(source *workloadapi.X509Source) []grpc.DialOption {
	tlsConfig := tlsconfig.MTLSClientConfig(source, source, tlsconfig.AuthorizeAny())
	tlsConfig.MinVersion = tls.VersionTLS12
	return []grpc.DialOption{
		grpc.WithTransportCredentials(grpcfd.TransportCredentials(credentials.NewTLS(tlsConfig))),
		grpcfd.WithChainStreamInterceptor(),
		grpcfd.WithChainUnaryInterceptor(),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTime, PermitWithoutStream: true}),
	}
}
