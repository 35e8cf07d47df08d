package fwdmetrics

import (
	"context"
	"time"

	"github.com/golang/protobuf/ptypes/empty"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

type latencyServer struct{}

// NewServer returns the element that records how long each Request and Close took in the rest of
// the chain. Place it first among the endpoint's own elements: everything behind authorization counts.
func NewServer() networkservice.NetworkServiceServer { return latencyServer{} }

func (latencyServer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	start := time.Now()
	conn, err := next.Server(ctx).Request(ctx, request)
	recordDuration(ctx, get().requestDuration, start, err)
	return conn, err
}

func (latencyServer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	start := time.Now()
	e, err := next.Server(ctx).Close(ctx, conn)
	recordDuration(ctx, get().closeDuration, start, err)
	return e, err
}
