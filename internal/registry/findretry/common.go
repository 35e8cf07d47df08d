package findretry

import (
	"context"
	"errors"
	"io"

	"github.com/networkservicemesh/api/pkg/api/registry"
	"github.com/networkservicemesh/sdk/pkg/registry/core/next"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// findToEnd makes one Find and reads its answers until the registry ends the stream.
func findToEnd(ctx context.Context, query *registry.NetworkServiceEndpointQuery, opts ...grpc.CallOption) ([]*registry.NetworkServiceEndpointResponse, error) {
	// The stream's own context ends with the attempt, so that a failed attempt leaves nothing open.
	attemptCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := next.NetworkServiceEndpointRegistryClient(ctx).Find(attemptCtx, query, opts...)
	if err != nil {
		return nil, err
	}
	var answers []*registry.NetworkServiceEndpointResponse
	for {
		answer, recvErr := stream.Recv()
		if errors.Is(recvErr, io.EOF) {
			return answers, nil
		}
		if recvErr != nil {
			return nil, recvErr
		}
		answers = append(answers, answer)
	}
}

// worthAnotherAttempt holds for a gRPC status with codes.Unknown, while the caller still waits.
// That is the status of an error the nsmgr's chain returned without a code, as its sendfd does
// with grpcfd's fault (see the package doc); any other code is the registry's answer, an error that
// is no status at all is this side's own (a connection not ready within the dial timeout), and a
// done context is the caller's.
func worthAnotherAttempt(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	s, isStatus := status.FromError(err)
	return isStatus && s.Code() == codes.Unknown
}
