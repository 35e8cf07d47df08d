package requestfd_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/pkg/errors"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/sdk/pkg/networkservice/common/mechanisms/sendfd"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/requestfd"
)

// failingNextHop fails every call, after noting the URLs it was sent.
type failingNextHop struct {
	seen []string
}

func (h *failingNextHop) Request(_ context.Context, request *networkservice.NetworkServiceRequest, _ ...grpc.CallOption) (*networkservice.Connection, error) {
	for _, mechanism := range append(request.GetMechanismPreferences(), request.GetConnection().GetMechanism()) {
		h.seen = append(h.seen, mechanism.GetParameters()[common.InodeURL])
	}
	return nil, errors.New("next hop failed")
}

func (h *failingNextHop) Close(_ context.Context, conn *networkservice.Connection, _ ...grpc.CallOption) (*empty.Empty, error) {
	h.seen = append(h.seen, conn.GetMechanism().GetParameters()[common.InodeURL])
	return nil, errors.New("next hop failed")
}

func fileURL(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	return "file://" + path
}

func requestNaming(preferred, current string) *networkservice.NetworkServiceRequest {
	return &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{
			Id:        "conn",
			Mechanism: &networkservice.Mechanism{Parameters: map[string]string{common.InodeURL: current}},
		},
		MechanismPreferences: []*networkservice.Mechanism{{Parameters: map[string]string{common.InodeURL: preferred}}},
	}
}

func urlsIn(request *networkservice.NetworkServiceRequest) []string {
	return []string{
		request.GetMechanismPreferences()[0].GetParameters()[common.InodeURL],
		request.GetConnection().GetMechanism().GetParameters()[common.InodeURL],
	}
}

func requireAllInode(t *testing.T, urls []string) {
	t.Helper()
	require.NotEmpty(t, urls)
	for _, url := range urls {
		require.True(t, strings.HasPrefix(url, "inode://"), "the next hop was sent %q, not the descriptor's inode:// URL", url)
	}
}

func TestFailedRequestLeavesTheRequestsURLsAsTheyWere(t *testing.T) {
	preferred, current := fileURL(t, "preferred"), fileURL(t, "current")
	for _, tc := range []struct {
		name     string
		element  networkservice.NetworkServiceClient
		restored bool
	}{
		{"sdk's sendfd", sendfd.NewClient(), false},
		{"requestfd", requestfd.NewClient(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hop := &failingNextHop{}
			request := requestNaming(preferred, current)

			_, err := chain.NewNetworkServiceClient(tc.element, hop).Request(context.Background(), request)
			require.Error(t, err)

			requireAllInode(t, hop.seen)
			if !tc.restored {
				// What requestfd is for: the next Request would name both by inode:// only.
				requireAllInode(t, urlsIn(request))
				return
			}
			require.Equal(t, []string{preferred, current}, urlsIn(request))
		})
	}
}

func TestFailedCloseLeavesTheConnectionsURLAsItWas(t *testing.T) {
	current := fileURL(t, "current")
	hop := &failingNextHop{}
	conn := requestNaming(fileURL(t, "preferred"), current).GetConnection()

	_, err := chain.NewNetworkServiceClient(requestfd.NewClient(), hop).Close(context.Background(), conn)
	require.Error(t, err)

	requireAllInode(t, hop.seen)
	require.Equal(t, current, conn.GetMechanism().GetParameters()[common.InodeURL])
}
