package monitorretry

import (
	"context"
	"slices"

	"google.golang.org/grpc"
)

// MonitorConnectionsMethod is the only method whose streams are made resilient.
const MonitorConnectionsMethod = "/connection.MonitorConnection/MonitorConnections"

// NewStreamClientInterceptor returns an interceptor that makes MonitorConnections streams survive
// idle cuts while the next hop lives. Other methods pass through untouched.
func NewStreamClientInterceptor(opts ...Option) grpc.StreamClientInterceptor {
	o := defaultOptions()
	for _, opt := range opts {
		opt(o)
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		stream, err := streamer(ctx, desc, cc, method, callOpts...)
		if err != nil || method != MonitorConnectionsMethod {
			return stream, err
		}
		return &resilientStream{
			ClientStream: stream,
			ctx:          ctx,
			// A re-open fails fast on a peer that refuses or is gone, whatever the dial's
			// default call options say: waiting for it to come back is the heal's job.
			open: func(streamCtx context.Context) (grpc.ClientStream, error) {
				return streamer(streamCtx, desc, cc, method, append(slices.Clone(callOpts), grpc.WaitForReady(false))...)
			},
			options: o,
		}, nil
	}
}

// DialOption installs the interceptor on a dial.
func DialOption(opts ...Option) grpc.DialOption {
	return grpc.WithChainStreamInterceptor(NewStreamClientInterceptor(opts...))
}
