package connfile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/internal/connfile"
)

// The file appears once the client says every first Request was granted, holds each connection
// as last granted, and changes on every later grant: a harness that restarted a forwarder sees
// the client's heal in it.
func TestRecorderRewritesOnEveryGrantOnceStarted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "connections.json")
	record := connfile.New(path)
	client := chain.NewNetworkServiceClient(record)
	ctx := context.Background()

	_, err := client.Request(ctx, request("a", "10.0.0.1/32"))
	require.NoError(t, err)
	_, err = client.Request(ctx, request("b", "10.0.0.2/32"))
	require.NoError(t, err)
	require.NoFileExists(t, path, "the file appeared before every first Request was granted")

	require.NoError(t, record.Start())
	require.Equal(t, map[string]string{"a": "10.0.0.1/32", "b": "10.0.0.2/32"}, read(t, path))

	_, err = client.Request(ctx, request("a", "10.0.0.9/32"))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "10.0.0.9/32", "b": "10.0.0.2/32"}, read(t, path), "a heal's grant is not in the file")

	require.NoError(t, record.Forget("a"))
	require.Equal(t, map[string]string{"b": "10.0.0.2/32"}, read(t, path), "a closed connection stays in the file")
}

func request(id, src string) *networkservice.NetworkServiceRequest {
	return &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{
		Id:      id,
		Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{SrcIpAddrs: []string{src}}},
	}}
}

// read is each connection's ID and first source address, as the file holds them.
func read(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		conn := &networkservice.Connection{}
		require.NoError(t, protojson.Unmarshal([]byte(line), conn))
		got[conn.GetId()] = conn.GetContext().GetIpContext().GetSrcIpAddrs()[0]
	}
	return got
}
