package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/ipam"
	"github.com/networkservicemesh/sdk/pkg/networkservice/connectioncontext/ipcontext/vl3"
	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// prefixWait bounds how long the endpoint waits for its first prefix: without one it can
// address nobody.
const prefixWait = time.Minute

// followPrefixServer asks the vl3 IPAM server for a prefix, resets pool to it and returns it.
// Until ctx ends it keeps the stream open and follows what the server says; a broken stream is
// opened again asking for the same prefix, so that an IPAM restart does not renumber the
// endpoint's clients (as cmd-nse-vl3-vpp does).
func followPrefixServer(ctx context.Context, server *url.URL, dialOptions []grpc.DialOption, pool *vl3.IPAM) (string, error) {
	first := make(chan string, 1)
	go func() {
		held := ""
		for ctx.Err() == nil {
			held = holdPrefix(ctx, server, dialOptions, pool, held, first)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	select {
	case prefix := <-first:
		return prefix, nil
	case <-time.After(prefixWait):
		return "", fmt.Errorf("no prefix from the vl3 IPAM server %s within %s", server.String(), prefixWait)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// holdPrefix runs one stream to the IPAM server, asking for held (any prefix when empty), and
// returns the prefix held when the stream ends. The first prefix received goes to first.
func holdPrefix(ctx context.Context, server *url.URL, dialOptions []grpc.DialOption, pool *vl3.IPAM, held string, first chan<- string) string {
	logger := log.FromContext(ctx)
	cc, err := grpc.NewClient(grpcutils.URLToTarget(server), dialOptions...)
	if err != nil {
		logger.Errorf("vl3 IPAM server %s: %v", server.String(), err)
		return held
	}
	defer func() { _ = cc.Close() }()
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := ipam.NewIPAMClient(cc).ManagePrefixes(streamCtx)
	if err != nil {
		logger.Errorf("vl3 IPAM server %s: %v", server.String(), err)
		return held
	}
	if err = stream.Send(&ipam.PrefixRequest{Type: ipam.Type_ALLOCATE, Prefix: held}); err != nil {
		logger.Errorf("vl3 IPAM server %s: %v", server.String(), err)
		return held
	}
	for {
		resp, recvErr := stream.Recv()
		if recvErr != nil {
			logger.Warnf("vl3 IPAM server %s: stream ended: %v", server.String(), recvErr)
			return held
		}
		if resp.GetPrefix() == held {
			continue
		}
		if err = pool.Reset(resp.GetPrefix(), resp.GetExcludePrefixes()...); err != nil {
			logger.Errorf("vl3 prefix %q: %v", resp.GetPrefix(), err)
			continue
		}
		if held == "" {
			select {
			case first <- resp.GetPrefix():
			default:
			}
		}
		held = resp.GetPrefix()
	}
}
