package xconnect_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync"
	"testing"

	"github.com/pkg/errors"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/acl"
	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/interface_types"
	"github.com/networkservicemesh/govpp/binapi/ip"
	"github.com/networkservicemesh/govpp/binapi/memclnt"
	"github.com/networkservicemesh/govpp/binapi/tapv2"
	"github.com/networkservicemesh/govpp/binapi/wireguard"
	"github.com/networkservicemesh/sdk-kernel/pkg/kernel/tools/nshandle"
	"github.com/networkservicemesh/sdk-vpp/pkg/tools/types"
)

// testVPP is the VPP the chain tests drive: a govpp connection plus the record of every request
// it received. startTestVPP is the one place to change to run the tests against another VPP
// (the simulator in test/vppsim). Like a VPP after uplink init, it has an uplink holding tunnelIP.
type testVPP interface {
	api.Connection
	Sent() []api.Message
}

func startTestVPP(t *testing.T, tunnelIP net.IP) testVPP {
	t.Helper()
	vpp := &fakeVPP{interfaces: map[interface_types.InterfaceIndex]*fakeInterface{}, nextIndex: 1}
	uplink := vpp.allocate("host-uplink")
	vpp.interfaces[uplink].addresses = []*net.IPNet{{IP: tunnelIP, Mask: net.CIDRMask(24, 8*len(tunnelIP.To4()))}}
	return vpp
}

// uplinkIndex asks VPP which interface holds the tunnel IP.
func uplinkIndex(t *testing.T, vpp testVPP) interface_types.InterfaceIndex {
	t.Helper()
	ctx := context.Background()
	dump, err := interfaces.NewServiceClient(vpp).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	require.NoError(t, err)
	for details, err := dump.Recv(); err != io.EOF; details, err = dump.Recv() {
		require.NoError(t, err)
		addresses, err := ip.NewServiceClient(vpp).IPAddressDump(ctx, &ip.IPAddressDump{SwIfIndex: details.SwIfIndex, IsIPv6: tunnelIP.To4() == nil})
		require.NoError(t, err)
		for address, err := addresses.Recv(); err != io.EOF; address, err = addresses.Recv() {
			require.NoError(t, err)
			if types.FromVppAddressWithPrefix(address.Prefix).IP.Equal(tunnelIP) {
				return details.SwIfIndex
			}
		}
	}
	t.Fatalf("no VPP interface holds %s", tunnelIP)
	return 0
}

// sentOfType returns the requests of type T the VPP received, in order.
func sentOfType[T api.Message](vpp testVPP) []T {
	var matching []T
	for _, msg := range vpp.Sent() {
		if typed, ok := msg.(T); ok {
			matching = append(matching, typed)
		}
	}
	return matching
}

// fakeVPP answers like VPP where the chain depends on the answer: it allocates sw_if_index
// values, reports interfaces as up in dumps, and creates and deletes the kernel end of taps, the
// only VPP action the kernel-side elements observe.
type fakeVPP struct {
	mu         sync.Mutex
	sent       []api.Message
	interfaces map[interface_types.InterfaceIndex]*fakeInterface
	nextIndex  interface_types.InterfaceIndex
	// acls holds the ACLs by index; sdk-vpp's pinhole reads back what it wrote.
	acls []*acl.ACLAddReplace
	// peers holds the wireguard peers by index; every peer has completed its handshake.
	peers []wireguard.WireguardPeer
}

type fakeInterface struct {
	name, tag string
	// tapNetNS and tapHostIfName locate the kernel end of a tap.
	tapNetNS, tapHostIfName string
	addresses               []*net.IPNet
	aclList                 *acl.ACLInterfaceSetACLList
}

func (f *fakeVPP) Sent() []api.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Message(nil), f.sent...)
}

func (f *fakeVPP) Invoke(_ context.Context, req, reply api.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, req)

	switch r := req.(type) {
	case *tapv2.TapCreateV3:
		index, err := f.createTap(r)
		if err != nil {
			return err
		}
		reply.(*tapv2.TapCreateV3Reply).SwIfIndex = index
		return nil
	case *tapv2.TapDeleteV2:
		return f.deleteTap(r.SwIfIndex)
	case *interfaces.SwInterfaceTagAddDel:
		if known, ok := f.interfaces[r.SwIfIndex]; ok && r.IsAdd {
			known.tag = r.Tag
		}
	case *acl.ACLAddReplace:
		reply.(*acl.ACLAddReplaceReply).ACLIndex = f.storeACL(r)
		return nil
	case *wireguard.WireguardPeerAdd:
		f.peers = append(f.peers, r.Peer)
		reply.(*wireguard.WireguardPeerAddReply).PeerIndex = uint32(len(f.peers) - 1)
		return nil
	case *acl.ACLInterfaceSetACLList:
		if known, ok := f.interfaces[r.SwIfIndex]; ok {
			known.aclList = r
		}
	}
	// Replies naming a new interface get a fresh index.
	if field := reflect.ValueOf(reply).Elem().FieldByName("SwIfIndex"); field.IsValid() && field.CanSet() {
		index := f.allocate(fmt.Sprintf("%s%d", req.GetMessageName(), f.nextIndex))
		field.SetUint(uint64(index))
	}
	return nil
}

func (f *fakeVPP) allocate(name string) interface_types.InterfaceIndex {
	index := f.nextIndex
	f.nextIndex++
	f.interfaces[index] = &fakeInterface{name: name}
	return index
}

func (f *fakeVPP) createTap(r *tapv2.TapCreateV3) (interface_types.InterfaceIndex, error) {
	mode := netlink.TUNTAP_MODE_TAP
	if r.TapFlags&tapv2.TAP_API_FLAG_TUN != 0 {
		mode = netlink.TUNTAP_MODE_TUN
	}
	if err := inNetNS(r.HostNamespace, func() error {
		return netlink.LinkAdd(&netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: r.HostIfName}, Mode: mode})
	}); err != nil {
		return 0, errors.Wrapf(err, "creating the kernel end %s of a tap in %s", r.HostIfName, r.HostNamespace)
	}
	index := f.allocate(fmt.Sprintf("tap%d", f.nextIndex))
	f.interfaces[index].tapNetNS = r.HostNamespace
	f.interfaces[index].tapHostIfName = r.HostIfName
	return index, nil
}

func (f *fakeVPP) deleteTap(index interface_types.InterfaceIndex) error {
	tap, ok := f.interfaces[index]
	if !ok || tap.tapNetNS == "" {
		return api.INVALID_SW_IF_INDEX
	}
	delete(f.interfaces, index)
	return inNetNS(tap.tapNetNS, func() error {
		link, err := netlink.LinkByName(tap.tapHostIfName)
		if err != nil {
			return err
		}
		return netlink.LinkDel(link)
	})
}

// inNetNS runs fn on a thread switched to the namespace at path, as VPP does for host interfaces.
func inNetNS(path string, fn func() error) error {
	target, err := netns.GetFromPath(path)
	if err != nil {
		return err
	}
	defer func() { _ = target.Close() }()
	current, err := netns.Get()
	if err != nil {
		return err
	}
	defer func() { _ = current.Close() }()
	return nshandle.RunIn(current, target, fn)
}

func (f *fakeVPP) NewStream(ctx context.Context, _ ...api.StreamOption) (api.Stream, error) {
	return &fakeStream{ctx: ctx, vpp: f, replies: make(chan api.Message, 64)}, nil
}

func (f *fakeVPP) WatchEvent(ctx context.Context, _ api.Message) (api.Watcher, error) {
	return newIdleWatcher(ctx), nil
}

// interfaceDetails answers a SwInterfaceDump: every known interface is admin and link up. Index 0
// (never allocated here) selects all, like ~0: sdk-vpp's MTU lookup sends a zero-valued dump and
// expects every interface.
func (f *fakeVPP) interfaceDetails(dump *interfaces.SwInterfaceDump) []api.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	all := dump.SwIfIndex == 0 || dump.SwIfIndex == ^interface_types.InterfaceIndex(0)
	var details []api.Message
	for index, known := range f.interfaces {
		if !all && dump.SwIfIndex != index {
			continue
		}
		details = append(details, &interfaces.SwInterfaceDetails{
			SwIfIndex:     index,
			Flags:         interface_types.IF_STATUS_API_FLAG_ADMIN_UP | interface_types.IF_STATUS_API_FLAG_LINK_UP,
			LinkMtu:       1500,
			Mtu:           []uint32{1500, 1500, 1500, 1500},
			InterfaceName: known.name,
			Tag:           known.tag,
		})
	}
	return details
}

func (f *fakeVPP) addressDetails(dump *ip.IPAddressDump) []api.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	known, ok := f.interfaces[dump.SwIfIndex]
	if !ok {
		return nil
	}
	var details []api.Message
	for _, address := range known.addresses {
		if (address.IP.To4() == nil) == dump.IsIPv6 {
			details = append(details, &ip.IPAddressDetails{SwIfIndex: dump.SwIfIndex, Prefix: types.ToVppAddressWithPrefix(address)})
		}
	}
	return details
}

func (f *fakeVPP) storeACL(r *acl.ACLAddReplace) uint32 {
	if r.ACLIndex < uint32(len(f.acls)) {
		f.acls[r.ACLIndex] = r
		return r.ACLIndex
	}
	f.acls = append(f.acls, r)
	return uint32(len(f.acls) - 1)
}

func (f *fakeVPP) aclDetails(dump *acl.ACLDump) []api.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if dump.ACLIndex >= uint32(len(f.acls)) {
		return nil
	}
	stored := f.acls[dump.ACLIndex]
	return []api.Message{&acl.ACLDetails{ACLIndex: dump.ACLIndex, Tag: stored.Tag, Count: stored.Count, R: stored.R}}
}

func (f *fakeVPP) aclInterfaceListDetails(dump *acl.ACLInterfaceListDump) []api.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	known, ok := f.interfaces[dump.SwIfIndex]
	if !ok {
		return nil
	}
	details := &acl.ACLInterfaceListDetails{SwIfIndex: dump.SwIfIndex}
	if known.aclList != nil {
		details.Count, details.NInput, details.Acls = known.aclList.Count, known.aclList.NInput, known.aclList.Acls
	}
	return []api.Message{details}
}

func (f *fakeVPP) peerDetails(dump *wireguard.WireguardPeersDump) []api.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if dump.PeerIndex >= uint32(len(f.peers)) {
		return nil
	}
	established := f.peers[dump.PeerIndex]
	established.PeerIndex = dump.PeerIndex
	established.Flags |= wireguard.WIREGUARD_PEER_ESTABLISHED
	return []api.Message{&wireguard.WireguardPeersDetails{Peer: established}}
}

// fakeStream serves dumps: details (of interfaces, addresses, ACLs and wireguard peers; other dumps
// have none)
// then the control ping reply that ends every dump.
type fakeStream struct {
	ctx     context.Context
	vpp     *fakeVPP
	replies chan api.Message
}

func (s *fakeStream) Context() context.Context { return s.ctx }

func (s *fakeStream) SendMsg(msg api.Message) error {
	switch m := msg.(type) {
	case *memclnt.ControlPing:
		s.replies <- &memclnt.ControlPingReply{}
	case *interfaces.SwInterfaceDump:
		s.vpp.record(msg)
		for _, details := range s.vpp.interfaceDetails(m) {
			s.replies <- details
		}
	case *ip.IPAddressDump:
		s.vpp.record(msg)
		for _, details := range s.vpp.addressDetails(m) {
			s.replies <- details
		}
	case *acl.ACLDump:
		s.vpp.record(msg)
		for _, details := range s.vpp.aclDetails(m) {
			s.replies <- details
		}
	case *wireguard.WireguardPeersDump:
		s.vpp.record(msg)
		for _, details := range s.vpp.peerDetails(m) {
			s.replies <- details
		}
	case *acl.ACLInterfaceListDump:
		s.vpp.record(msg)
		for _, details := range s.vpp.aclInterfaceListDetails(m) {
			s.replies <- details
		}
	default:
		s.vpp.record(msg)
	}
	return nil
}

func (s *fakeStream) RecvMsg() (api.Message, error) {
	select {
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	case msg := <-s.replies:
		return msg, nil
	}
}

func (s *fakeStream) Close() error { return nil }

func (f *fakeVPP) record(msg api.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, msg)
}

// idleWatcher never sees an event: the fake reports links up in dumps instead.
type idleWatcher struct {
	events chan api.Message
	once   sync.Once
}

func newIdleWatcher(ctx context.Context) *idleWatcher {
	w := &idleWatcher{events: make(chan api.Message)}
	context.AfterFunc(ctx, w.Close)
	return w
}

func (w *idleWatcher) Events() <-chan api.Message { return w.events }

func (w *idleWatcher) Close() { w.once.Do(func() { close(w.events) }) }
