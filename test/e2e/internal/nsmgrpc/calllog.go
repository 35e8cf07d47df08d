package nsmgrpc

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
)

// Call is one Request or Close an nsmgr served (In) or made (Out), as CallLog records it. Key
// is the client's own connection ID (the first path segment's), the same on every hop of the
// connection; Peer is the hop on the other side: for an incoming call the caller, for an
// outgoing one the hop called (known once it answered, or from an earlier Request).
type Call struct {
	Out    bool      `json:"out"`
	Method string    `json:"method"`
	Key    string    `json:"key"`
	Peer   string    `json:"peer"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	OK     bool      `json:"ok"`
}

const (
	requestMethod = "/networkservice.NetworkService/Request"
	closeMethod   = "/networkservice.NetworkService/Close"
)

// CallLog appends one JSON line per Request and Close to a file, written by a goroutine of its
// own so that the calls being timed never wait on the disk. With it the harness tells how long
// a forwarder took for a Request, from the nsmgr on either side of it: the nsmgr's call to the
// forwarder less the forwarder's nested call back to the nsmgr.
type CallLog struct {
	calls chan Call
	done  chan struct{}
}

// NewCallLog writes to path until ctx ends; a nil *CallLog (path empty) records nothing.
func NewCallLog(ctx context.Context, path string) (*CallLog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	l := &CallLog{calls: make(chan Call, 4096), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer func() { _ = f.Close() }()
		enc := json.NewEncoder(f)
		for {
			select {
			case c := <-l.calls:
				_ = enc.Encode(c)
			case <-ctx.Done():
				return
			}
		}
	}()
	return l, nil
}

// ServerOptions time the calls the nsmgr serves.
func (l *CallLog) ServerOptions() []grpc.ServerOption {
	if l == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		// The caller, before the chain's updatepath moves the path on to this hop.
		method, conn := nsmCall(info.FullMethod, req)
		var key, peer string
		if method != "" {
			path := conn.GetPath()
			key, peer = firstID(path), path.GetPathSegments()[min(int(path.GetIndex()), len(path.GetPathSegments())-1)].GetName()
		}
		start := time.Now()
		resp, err := handler(ctx, req)
		end := time.Now()
		if method != "" {
			l.record(Call{Method: method, Key: key, Peer: peer, Start: start, End: end, OK: err == nil})
		}
		return resp, err
	})}
}

// DialOptions time the calls the nsmgr makes.
func (l *CallLog) DialOptions() []grpc.DialOption {
	if l == nil {
		return nil
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ctx context.Context, fullMethod string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		method, conn := nsmCall(fullMethod, req)
		key := ""
		if method != "" {
			key = firstID(conn.GetPath())
		}
		start := time.Now()
		err := invoker(ctx, fullMethod, req, reply, cc, opts...)
		end := time.Now()
		if method != "" {
			// The hop called answers with the path index back at the caller's segment.
			path := conn.GetPath()
			if answered, ok := reply.(*networkservice.Connection); ok && err == nil && method == "Request" {
				path = answered.GetPath()
			}
			peer := ""
			if next := int(path.GetIndex()) + 1; next < len(path.GetPathSegments()) {
				peer = path.GetPathSegments()[next].GetName()
			}
			l.record(Call{Out: true, Method: method, Key: key, Peer: peer, Start: start, End: end, OK: err == nil})
		}
		return err
	})}
}

func (l *CallLog) record(c Call) {
	select {
	case l.calls <- c:
	case <-l.done:
	}
}

// nsmCall names the NetworkService method of a call and its connection; "" for any other call.
func nsmCall(fullMethod string, req any) (string, *networkservice.Connection) {
	switch fullMethod {
	case requestMethod:
		if r, ok := req.(*networkservice.NetworkServiceRequest); ok && len(r.GetConnection().GetPath().GetPathSegments()) > 0 {
			return "Request", r.GetConnection()
		}
	case closeMethod:
		if c, ok := req.(*networkservice.Connection); ok && len(c.GetPath().GetPathSegments()) > 0 {
			return "Close", c
		}
	}
	return "", nil
}

func firstID(path *networkservice.Path) string {
	return path.GetPathSegments()[0].GetId()
}
