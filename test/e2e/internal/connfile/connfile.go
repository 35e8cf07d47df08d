// Package connfile keeps a test client's NSM_CONNECTION_FILE equal to the connections it holds.
// The harness (test/e2e/domain) reads the file for what each client was granted, and its
// modification time for when: after a forwarder restart, a rewrite is the client's heal.
package connfile

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

// Recorder is a client chain element writing the file. The chain's refreshes and heals pass
// through it too, so once started the file is rewritten after each of them. Place it before the
// elements that set up the client's data plane, so that a rewrite comes after they did.
type Recorder struct {
	path string

	mu    sync.Mutex
	order []string
	conns map[string]*networkservice.Connection
	// started is set once every initial Request was granted: the file first appears with all
	// of them, and the harness waits for that.
	started bool
}

// New returns a Recorder of path; nothing is written before Start.
func New(path string) *Recorder {
	return &Recorder{path: path, conns: map[string]*networkservice.Connection{}}
}

// Request records the connection granted.
func (r *Recorder) Request(ctx context.Context, request *networkservice.NetworkServiceRequest, opts ...grpc.CallOption) (*networkservice.Connection, error) {
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

// Close passes the Close on; Forget drops the connection from the file.
func (r *Recorder) Close(ctx context.Context, conn *networkservice.Connection, opts ...grpc.CallOption) (*emptypb.Empty, error) {
	return next.Client(ctx).Close(ctx, conn, opts...)
}

// Start writes the file for the first time, once every initial Request was granted, and from
// then on after each refresh and heal.
func (r *Recorder) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = true
	return r.writeLocked()
}

// Forget drops a closed connection from the file.
func (r *Recorder) Forget(id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.conns, id)
	for i, known := range r.order {
		if known == id {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
	return r.writeLocked()
}

// writeLocked replaces the file atomically, so a reader never sees half of it.
func (r *Recorder) writeLocked() error {
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
