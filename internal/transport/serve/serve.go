package serve

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
)

// Server is a running gRPC server.
type Server struct {
	grpcServer *grpc.Server
	// Errors receives the error that ends serving early, then is closed; a requested Stop closes
	// it without an error.
	Errors <-chan error
}

// Start listens on listenOn and serves grpcServer until Stop. A unix socket's directory is
// created and a stale socket from a previous run replaced. For tcp, listenOn is updated to the
// bound address (a :0 port becomes the real one), since that is what gets registered.
func Start(listenOn *url.URL, grpcServer *grpc.Server) (*Server, error) {
	listener, err := listen(listenOn)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", listenOn, err)
	}
	errs := make(chan error, 1)
	go func() {
		if err := grpcServer.Serve(listener); err != nil {
			errs <- err
		}
		close(errs)
	}()
	return &Server{grpcServer: grpcServer, Errors: errs}, nil
}

func listen(listenOn *url.URL) (net.Listener, error) {
	switch listenOn.Scheme {
	case "unix":
		if err := os.MkdirAll(filepath.Dir(listenOn.Path), 0o750); err != nil {
			return nil, err
		}
		if err := os.Remove(listenOn.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("removing the stale socket: %w", err)
		}
		listener, err := net.Listen("unix", listenOn.Path)
		if err != nil {
			return nil, err
		}
		// Like every NSM component: peers running as other users must reach the socket; who may
		// talk is decided by mTLS and OPA, not by file modes.
		if err := os.Chmod(listenOn.Path, os.ModePerm); err != nil {
			_ = listener.Close()
			return nil, err
		}
		return listener, nil
	case "tcp":
		listener, err := net.Listen("tcp", listenOn.Host)
		if err == nil {
			listenOn.Host = listener.Addr().String()
		}
		return listener, err
	}
	return nil, fmt.Errorf("unsupported scheme %q", listenOn.Scheme)
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
}
