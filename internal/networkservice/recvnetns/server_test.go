package recvnetns_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/common"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/memif"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
)

const netnsPrefix = "rns"

// opened is what an element behind recvnetns found in a namespace URL: the URL and the file it opens.
type opened struct {
	url        string
	dev, inode uint64
}

// observer stands for the elements that open namespaces: it selects the first preference and
// records what its inodeURL opens, on Request and on Close.
type observer struct {
	mu     sync.Mutex
	opened []opened
}

func (o *observer) see(mechanism *networkservice.Mechanism) {
	raw := mechanism.GetParameters()[common.InodeURL]
	seen := opened{url: raw}
	var stat syscall.Stat_t
	if len(raw) > len("file://") && syscall.Stat(raw[len("file://"):], &stat) == nil {
		seen.dev, seen.inode = stat.Dev, stat.Ino
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.opened = append(o.opened, seen)
}

func (o *observer) seen() []opened {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]opened(nil), o.opened...)
}

func (o *observer) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	request.GetConnection().Mechanism = request.GetMechanismPreferences()[0]
	o.see(request.GetConnection().GetMechanism())
	return next.Server(ctx).Request(ctx, request)
}

func (o *observer) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	o.see(conn.GetMechanism())
	return next.Server(ctx).Close(ctx, conn)
}

func statOf(t *testing.T, path string) (dev, inode uint64) {
	t.Helper()
	var stat syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &stat))
	return stat.Dev, stat.Ino
}

func request(mechanism *networkservice.Mechanism) *networkservice.NetworkServiceRequest {
	return &networkservice.NetworkServiceRequest{
		Connection:           &networkservice.Connection{Id: "conn-1"},
		MechanismPreferences: []*networkservice.Mechanism{mechanism},
	}
}

func kernelMechanism(netnsURL string) *networkservice.Mechanism {
	return &networkservice.Mechanism{Cls: cls.LOCAL, Type: kernel.MECHANISM, Parameters: map[string]string{
		kernel.NetNSURL: netnsURL, kernel.InterfaceNameKey: "nsm-1",
	}}
}

// serveObserved serves recvnetns in front of an observer as the forwarder serves nsmgr.
func serveObserved(t *testing.T) (sending, raw networkservice.NetworkServiceClient, seen *observer) {
	t.Helper()
	seen = &observer{}
	u := recvnetnstest.Serve(t, func(server *grpc.Server) {
		networkservice.RegisterNetworkServiceServer(server, chain.NewNetworkServiceServer(recvnetns.NewServer(), seen))
	})
	cc := recvnetnstest.Dial(t, u)
	return recvnetnstest.SendingClient(cc), networkservice.NewNetworkServiceClient(cc), seen
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNamespacePassedAsDescriptorIsOpenedThroughIt(t *testing.T) {
	ns := vppsimtest.NewNetns(t, netnsPrefix)
	sending, _, seen := serveObserved(t)

	conn, err := sending.Request(timeout(t), request(kernelMechanism("file://"+ns.Path())))
	require.NoError(t, err)

	require.Len(t, seen.seen(), 1)
	got := seen.seen()[0]
	require.Regexp(t, fmt.Sprintf(`^file:///proc/%d/fd/\d+$`, os.Getpid()), got.url, "the URL recvfd made of the received descriptor")
	dev, inode := statOf(t, ns.Path())
	require.Equal(t, [2]uint64{dev, inode}, [2]uint64{got.dev, got.inode}, "the descriptor opens the namespace the client sent")
	require.Equal(t, "file://"+ns.Path(), kernel.ToMechanism(conn.GetMechanism()).GetNetNSURL(), "the client gets its own URL back")

	_, err = sending.Close(timeout(t), conn)
	require.NoError(t, err)
	require.Len(t, seen.seen(), 2)
	require.Equal(t, got.url, seen.seen()[1].url, "Close opens the same descriptor")
}

// A peer that writes a namespace URL instead of passing the namespace gets InvalidArgument naming
// the field, and nothing behind recvnetns runs.
func TestForgedNamespaceURLsAreRefused(t *testing.T) {
	_, raw, seen := serveObserved(t)
	ownDescriptor := fmt.Sprintf("file:///proc/%d/fd/0", os.Getpid())
	for name, mechanism := range map[string]*networkservice.Mechanism{
		"the node's namespace by path":          kernelMechanism("file:///proc/1/ns/net"),
		"a descriptor of the forwarder by path": kernelMechanism(ownDescriptor),
		"a bare path":                           kernelMechanism("/proc/1/ns/net"),
		"another scheme":                        kernelMechanism("http://nsmgr/ns"),
		"an inode URL with a query":             kernelMechanism("inode://4/4026531840?x=1"),
		"an inode URL with a leading zero":      kernelMechanism("inode://4/04026531840"),
		"a kernel mechanism without namespace":  {Cls: cls.LOCAL, Type: kernel.MECHANISM, Parameters: map[string]string{kernel.InterfaceNameKey: "nsm-1"}},
		"a memif socket by path":                memif.NewAbstract("/proc/1/ns/net"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := raw.Request(timeout(t), request(mechanism))
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			require.Contains(t, status.Convert(err).Message(), "mechanismPreferences[0].parameters.inodeURL")
			require.Empty(t, seen.seen(), "an element behind recvnetns ran")
		})
	}
}

// Called without a descriptor-passing transport, recvfd leaves inode:// as it is, and sdk-kernel
// would open it as the forwarder's own namespace.
func TestInodeURLThatWasNotReceivedIsRefused(t *testing.T) {
	seen := &observer{}
	server := chain.NewNetworkServiceServer(recvnetns.NewServer(), seen)
	dev, inode := statOf(t, "/proc/self/ns/net")

	_, err := server.Request(timeout(t), request(kernelMechanism(fmt.Sprintf("inode://%d/%d", dev, inode))))
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.Contains(t, status.Convert(err).Message(), "is not a namespace received as a file descriptor")
	require.Empty(t, seen.seen())
}

func TestDescriptorOfAnythingButANetworkNamespaceIsRefusedForAKernelMechanism(t *testing.T) {
	plainFile := filepath.Join(t.TempDir(), "not-a-namespace")
	require.NoError(t, os.WriteFile(plainFile, nil, 0o600))
	sending, _, seen := serveObserved(t)

	for _, notANetworkNamespace := range []string{plainFile, "/proc/self/ns/pid"} {
		_, err := sending.Request(timeout(t), request(kernelMechanism("file://"+notANetworkNamespace)))
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
		require.Contains(t, status.Convert(err).Message(), "is not a network namespace")
		require.Empty(t, seen.seen())
	}

	// A memif mechanism may pass a socket file: only its origin is checked.
	_, err := sending.Request(timeout(t), request(memif.NewAbstract(plainFile)))
	require.NoError(t, err)
	require.Len(t, seen.seen(), 1)
}

// Close is never refused, but what it cannot verify it must not open either: the elements behind
// see a URL nothing can open, and the connection keeps its own.
func TestCloseWithAnUnverifiedNamespaceOpensNothing(t *testing.T) {
	seen := &observer{}
	server := chain.NewNetworkServiceServer(recvnetns.NewServer(), seen)
	conn := &networkservice.Connection{Id: "conn-1", Mechanism: kernelMechanism("file:///proc/1/ns/net")}

	_, err := server.Close(timeout(t), conn)
	require.NoError(t, err)
	require.Len(t, seen.seen(), 1)
	require.Equal(t, "file:///proc/self/fd/-1", seen.seen()[0].url)
	require.Zero(t, seen.seen()[0].inode, "the stand-in opens nothing")
	require.Equal(t, "file:///proc/1/ns/net", kernel.ToMechanism(conn.GetMechanism()).GetNetNSURL())
}
