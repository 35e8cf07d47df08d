package main

import (
	"context"
	"os"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
	"github.com/networkservicemesh/sdk/pkg/tools/log"
)

// recorder keeps NSM_CONNECTION_FILE equal to the connections the client
// holds. The client chain's refreshes and heals pass through it too, so the
// file is rewritten after each of them: a harness that restarted a forwarder
// sees when the client has been granted its connection again.
type recorder struct {
	path string

	mu    sync.Mutex
	order []string
	conns map[string]*networkservice.Connection
	// started is set once every initial Request was granted: the file first
	// appears with all of them, and the harness waits for that.
	started bool
}

func newRecorder(path string) *recorder {
	return &recorder{path: path, conns: map[string]*networkservice.Connection{}}
}

func (r *recorder) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
	conn, err := next.Client(ctx).Request(ctx, request, opts...)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, known := r.conns[conn.GetId()]; !known {
		r.order = append(r.order, conn.GetId())
	}
	r.conns[conn.GetId()] = conn.Clone()
	if r.started {
		// The connection itself is fine; only the harness's view of it is stale.
		if writeErr := r.writeLocked(); writeErr != nil {
			log.FromContext(ctx).Errorf("rewriting %s after a refresh: %v", r.path, writeErr)
		}
	}
	return conn, nil
}

func (r *recorder) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*emptypb.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// start writes the file for the first time, once every initial Request was
// granted, and from then on after each refresh and heal.
func (r *recorder) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = true
	return r.writeLocked()
}

// writeLocked replaces the file atomically, so a reader never sees half of it.
func (r *recorder) writeLocked() error {
	lines := make([]string, 0, len(r.order))
	for _, id := range r.order {
		data, err := protojson.Marshal(r.conns[id])
		if err != nil {
			return err
		}
		lines = append(lines, string(data))
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.path)
}
