package xconnect_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/cls"
	kernelmech "github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/mechanisms/vxlan"
	"github.com/networkservicemesh/sdk-vpp/pkg/networkservice/metrics"
	"github.com/networkservicemesh/sdk/pkg/networkservice/chains/endpoint"
	"github.com/networkservicemesh/sdk/pkg/tools/clienturlctx"
	"github.com/networkservicemesh/sdk/pkg/tools/sandbox"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/recvnetns/recvnetnstest"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/eagerstream"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// Documentation addresses (RFC 5737) on the uplink between the simulator and a remote namespace:
// tunnels lead nowhere but into the test's own namespaces.
var (
	tunnelIP      = net.ParseIP("192.0.2.1")
	remoteIP      = net.ParseIP("192.0.2.2")
	nscAddress    = "172.16.0.1/32"
	nseAddress    = "172.16.0.2/32"
	testVxlanPort = uint16(4790)
)

type harness struct {
	ctx       context.Context
	vpp       *testVPP
	forwarder endpoint.Endpoint
	nsmgr     *nsmgr
	hop       *nextHop
}

// newHarness runs the forwarder endpoint in-process on a VPP of backend, connecting onward to
// hop. The test plays nsmgr: it calls the endpoint over gRPC, passing namespaces as file
// descriptors, with the next hop's URL already chosen; the endpoint is served with the forwarder's
// own transport (see serveForwarder). VPP gets a node namespace of its own unless
// the veth mechanism needs it to share the test process's (see startTestVPP).
func newHarness(t *testing.T, backend vpptest.Backend, kind kernelif.Kind, hop *nextHop, opts ...xconnect.Option) *harness {
	t.Helper()
	return newHarnessWith(t, backend, kind, hop, func(*testVPP) []xconnect.Option { return opts })
}

// newHarnessWith is newHarness with options that depend on VPP, such as its uplink's name.
func newHarnessWith(t *testing.T, backend vpptest.Backend, kind kernelif.Kind, hop *nextHop, optsFor func(*testVPP) []xconnect.Option) *harness {
	t.Helper()
	return newHarnessServed(t, backend, kind, hop, serveForwarder, optsFor)
}

// newHarnessServed is newHarnessWith with the forwarder served and reached by serve.
func newHarnessServed(t *testing.T, backend vpptest.Backend, kind kernelif.Kind, hop *nextHop, serve func(*testing.T, endpoint.Endpoint) *nsmgr, optsFor func(*testVPP) []xconnect.Option) *harness {
	t.Helper()
	var node *vppsimtest.Netns
	if kind.Resolve() != kernelif.Veth {
		node = vppsimtest.NewNetns(t, netnsPrefix)
	}
	vpp := startTestVPP(t, backend, node)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	hopURL := hop.serve(ctx, t)
	forwarder := newForwarder(ctx, t, vpp, vpp, kind, optsFor(vpp)...)
	return &harness{
		ctx:       clienturlctx.WithClientURL(ctx, hopURL),
		vpp:       vpp,
		forwarder: forwarder,
		nsmgr:     serve(t, forwarder),
		hop:       hop,
	}
}

// newForwarder builds the forwarder endpoint on vppConn, a connection to vpp, read as the
// forwarder reads its own (internal/startup).
func newForwarder(ctx context.Context, t *testing.T, vpp *testVPP, vppConn api.Connection, kind kernelif.Kind, opts ...xconnect.Option) endpoint.Endpoint {
	t.Helper()
	forwarder, err := xconnect.NewServer(ctx, sandbox.GenerateTestToken, eagerstream.NewConnection(vppConn), vpp.tunnelIP, append([]xconnect.Option{
		xconnect.WithName("forwarder"),
		xconnect.WithKernelInterface(kind),
		xconnect.WithVxlanOptions(vxlan.WithPort(testVxlanPort)),
		xconnect.WithDialOptions(forwarderDialOptions()...),
		xconnect.WithDialTimeout(5 * time.Second),
		xconnect.WithMetricsOptions(metrics.WithSocket(vpp.StatsSocket())),
	}, opts...)...)
	require.NoError(t, err)
	return forwarder
}

// forwarderDialOptions are the sdk sandbox's dial options (test tokens, no TLS) on the forwarder's
// own descriptor-passing transport, which replaces the sandbox's grpcfd (the last transport
// credentials given win).
func forwarderDialOptions(more ...grpc.DialOption) []grpc.DialOption {
	return append(append(sandbox.DialOptions(), grpc.WithTransportCredentials(recvnetnstest.ForwarderCredentials())), more...)
}

// kindOn is the kernel interface a test that could use either uses on backend: a tap on the
// simulator, a veth pair on real VPP, whose taps need /dev/vhost-net (these machines have none).
func kindOn(backend vpptest.Backend) kernelif.Kind {
	if backend == vpptest.Real {
		return kernelif.Veth
	}
	return kernelif.Tap
}

// eachBackendFor runs f once per backend that can give a client kind: the simulator always,
// real VPP unless kind is a tap and the machine has no /dev/vhost-net (see kindOn).
func eachBackendFor(t *testing.T, kind kernelif.Kind, f func(t *testing.T, backend vpptest.Backend)) {
	t.Helper()
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		if _, err := os.Stat("/dev/vhost-net"); backend == vpptest.Real && kind == kernelif.Tap && err != nil {
			t.Skip("VPP's tap interfaces need /dev/vhost-net, which this machine lacks")
		}
		f(t, backend)
	})
}

// eachKernelKind runs f for the tap kind on the simulator (VPP's taps need /dev/vhost-net) and
// for the veth kind on every backend.
func eachKernelKind(t *testing.T, f func(t *testing.T, kind kernelif.Kind, backend vpptest.Backend)) {
	t.Helper()
	t.Run("tap", func(t *testing.T) { f(t, kernelif.Tap, vpptest.Sim) })
	t.Run("veth", func(t *testing.T) {
		vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) { f(t, kernelif.Veth, backend) })
	})
}

func (h *harness) request(t *testing.T, request *networkservice.NetworkServiceRequest) *networkservice.Connection {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	conn, err := h.nsmgr.Request(ctx, request)
	require.NoError(t, err)
	return conn
}

func (h *harness) close(t *testing.T, conn *networkservice.Connection) {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	_, err := h.nsmgr.Close(ctx, conn)
	require.NoError(t, err)
}

// kernelRequest is what nsmgr forwards for a client asking for a kernel interface in netnsPath;
// nsmgr passes the namespace as a file descriptor.
func kernelRequest(connID, netnsPath, ifName, connPayload string) *networkservice.NetworkServiceRequest {
	return &networkservice.NetworkServiceRequest{
		Connection: &networkservice.Connection{
			Id:             connID,
			NetworkService: "ns",
			Payload:        connPayload,
			Path: &networkservice.Path{PathSegments: []*networkservice.PathSegment{{
				Name: "nsc", Id: connID, Expires: timestamppb.New(time.Now().Add(time.Hour)),
			}}},
			Context: &networkservice.ConnectionContext{IpContext: &networkservice.IPContext{
				SrcIpAddrs: []string{nscAddress},
				DstIpAddrs: []string{nseAddress},
			}},
		},
		MechanismPreferences: []*networkservice.Mechanism{{
			Cls:  cls.LOCAL,
			Type: kernelmech.MECHANISM,
			Parameters: map[string]string{
				kernelmech.NetNSURL:         "file://" + netnsPath,
				kernelmech.InterfaceNameKey: ifName,
			},
		}},
	}
}

// kernelNextHop accepts the kernel mechanism into its own namespace, as a local NSE does, and
// passes the namespace back as a file descriptor.
func kernelNextHop(netnsPath, ifName string) *nextHop {
	return &nextHop{mechanismType: kernelmech.MECHANISM, configure: func(m *networkservice.Mechanism) {
		m.Parameters[kernelmech.NetNSURL] = "file://" + netnsPath
		m.Parameters[kernelmech.InterfaceNameKey] = ifName
	}}
}

func requireKernelEnd(t *testing.T, netnsPath, ifName, alias, address string) netlink.Link {
	t.Helper()
	link := linkIn(t, netnsPath, ifName)
	require.NotNil(t, link, "no %s in %s", ifName, netnsPath)
	require.Equal(t, alias, link.Attrs().Alias, "the alias carries the connection ID for recovery")
	require.Contains(t, addressesOf(t, netnsPath, link), address)
	return link
}

func tapCreatedFor(t *testing.T, creates []*tapv2.TapCreateV3, netnsPath string) *tapv2.TapCreateV3 {
	t.Helper()
	for _, create := range creates {
		if netnsID(create.HostNamespace) == netnsID(netnsPath) {
			return create
		}
	}
	t.Fatalf("no tap_create_v3 for %s among %+v", netnsPath, creates)
	return nil
}

// netnsID identifies the namespace a path opens by device and inode: the forwarder hands VPP the
// descriptor it received (/proc/<pid>/fd/<n>), never the path the client opened.
func netnsID(path string) string {
	var stat syscall.Stat_t
	if err := syscall.Stat(path, &stat); err != nil {
		return "unopenable " + path
	}
	return fmt.Sprintf("%d:%d", stat.Dev, stat.Ino)
}
