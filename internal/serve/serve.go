package serve

import (
	"context"
	"net/url"
	"time"

	"google.golang.org/grpc"

	"github.com/networkservicemesh/sdk/pkg/tools/grpcutils"
)

// Server is a running gRPC server.
type Server struct {
	grpcServer *grpc.Server
	// Errors receives the error that ends serving early, then is closed.
	Errors <-chan error
	cancel context.CancelFunc
}

// Start listens on listenOn (a unix socket path is created, a stale socket replaced) and serves
// grpcServer until Stop. It returns at once; a failure to listen arrives on Errors.
func Start(listenOn *url.URL, grpcServer *grpc.Server) *Server {
	serveCtx, cancel := context.WithCancel(context.Background())
	return &Server{grpcServer: grpcServer, Errors: grpcutils.ListenAndServe(serveCtx, listenOn, grpcServer), cancel: cancel}
}

// Stop stops accepting connections and lets in-flight calls finish for up to grace; then it
// closes whatever remains (long-lived monitor streams never finish by themselves).
func (s *Server) Stop(grace time.Duration) {
	stopped := make(chan struct{})
	go func() {
		s.grpcServer.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(grace):
		s.grpcServer.Stop()
		<-stopped
	}
	s.cancel()
}
