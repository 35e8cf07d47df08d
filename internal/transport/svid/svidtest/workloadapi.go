package svidtest

import (
	"crypto/x509"
	"net"
	"path/filepath"
	"testing"

	"github.com/spiffe/go-spiffe/v2/proto/spiffe/workload"
	"google.golang.org/grpc"
)

// workloadAPI answers FetchX509SVID with one identity, like a spire agent that attested the
// caller, and keeps the stream open as the agent does.
type workloadAPI struct {
	workload.UnimplementedSpiffeWorkloadAPIServer
	response *workload.X509SVIDResponse
}

func (w *workloadAPI) FetchX509SVID(_ *workload.X509SVIDRequest, stream grpc.ServerStreamingServer[workload.X509SVIDResponse]) error {
	if err := stream.Send(w.response); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

// ServeWorkloadAPI serves the SPIFFE workload API for identity on a unix socket until the test
// ends, and returns the address to put in SPIFFE_ENDPOINT_SOCKET.
func ServeWorkloadAPI(t testing.TB, identity *Identity) string {
	key, err := x509.MarshalPKCS8PrivateKey(identity.svid.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	var chain, bundle []byte
	for _, certificate := range identity.svid.Certificates {
		chain = append(chain, certificate.Raw...)
	}
	for _, authority := range identity.bundle.X509Authorities() {
		bundle = append(bundle, authority.Raw...)
	}
	api := &workloadAPI{response: &workload.X509SVIDResponse{Svids: []*workload.X509SVID{{
		SpiffeId:    identity.svid.ID.String(),
		X509Svid:    chain,
		X509SvidKey: key,
		Bundle:      bundle,
	}}}}

	socket := filepath.Join(t.TempDir(), "agent.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	workload.RegisterSpiffeWorkloadAPIServer(server, api)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return "unix://" + socket
}
