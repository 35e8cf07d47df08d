package restore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang/protobuf/ptypes/empty"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/api/pkg/api/networkservice/mechanisms/kernel"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"
)

// rebuildsInterface stands for the mechanism element building the client's side again: a
// Request that claimed no interface of the previous run gets a new one under the same name (the
// release of the old one took its routes; the rules looking up its tables stay).
type rebuildsInterface struct {
	client *clientNetns
}

func (r *rebuildsInterface) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	name := kernel.ToMechanism(request.GetConnection().GetMechanism()).GetInterfaceName()
	if old, err := r.client.handle.LinkByName(name); err == nil {
		if err := r.client.handle.LinkDel(old); err != nil {
			return nil, err
		}
	}
	if err := r.client.handle.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "p"}); err != nil {
		return nil, err
	}
	for _, end := range []string{name, name + "p"} {
		link, err := r.client.handle.LinkByName(end)
		if err != nil {
			return nil, err
		}
		if err := r.client.handle.LinkSetUp(link); err != nil {
			return nil, err
		}
	}
	return next.Server(ctx).Request(ctx, request)
}

func (r *rebuildsInterface) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// issue 27, crash campaign: a connection the restarted forwarder matches to the dead run's record
// comes back under another ID for the forwarder's segment (the forwarder came back under another
// name, or, while leftovers were claimed by any path segment, a client restarted in its pod with a
// fresh path). Its client's side is rebuilt (a first Request has no mechanism yet) and the
// endpoint hands out a new address. The old address's rule looks up a table hashed from the old
// ID, which the rebuild emptied and nothing but the old record names: it must go before that
// record is dropped.
func TestRebuildUnderANewIDLeavesNoRuleOfTheOldContext(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	onlyB, both := previousLife(t, client, journalDir, vppConn, fwdNetns)
	oldRules := subtract(both, onlyB)
	require.Len(t, oldRules, 4)

	restarted := client.connection("conn-a2", "nsm-a", 3)
	restarted.GetPath().GetPathSegments()[0].Id = "nsc-conn-a"
	restarted.GetPath().GetPathSegments()[1].Name = "forwarder-renamed"
	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns,
		&rebuildsInterface{client: client}, &answersWithContext{context: restarted.GetContext()})
	_, err := second.chain.Request(context.Background(), firstRequest(restarted))
	require.NoError(t, err)

	marked := client.marked(t)
	for _, old := range oldRules {
		require.NotContains(t, marked, old, "the previous IP context's rule or route outlived the rebuild")
	}
	for _, line := range marked {
		require.NotContains(t, line, "172.16.1.", "a rule or route of the previous IP context is left: %v", marked)
	}
	require.Len(t, marked, len(both), "the new context's rules and routes beside conn-b's: %v", marked)
	require.Equal(t, []string{"conn-a2", "conn-b"}, recordIDs(t, journalDir))

	_, err = second.chain.Close(context.Background(), restarted)
	require.NoError(t, err)
	require.Equal(t, onlyB, client.marked(t), "the Close of the rebuilt connection left state behind")
}

// subtract is what all holds that some does not.
func subtract(all, some []string) []string {
	var out []string
	for _, line := range all {
		if !slices.Contains(some, line) {
			out = append(out, line)
		}
	}
	return out
}

// holdsRequests keeps every Request of one connection until released, then fails it: a heal that
// is still in flight, stuck on a next hop that is being killed, when the grace period ends.
type holdsRequests struct {
	id               string
	arrived, release chan struct{}
}

func (h *holdsRequests) Request(ctx context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	if request.GetConnection().GetId() != h.id {
		return next.Server(ctx).Request(ctx, request)
	}
	h.arrived <- struct{}{}
	<-h.release
	return nil, errors.New("the next hop was killed")
}

func (h *holdsRequests) Close(ctx context.Context, conn *networkservice.Connection) (*empty.Empty, error) {
	return next.Server(ctx).Close(ctx, conn)
}

// issue 27, crash campaign: a leftover that a Request claimed when the grace period ended was
// skipped by it; the Request then failed and gave it back, and nothing released it ever after
// (its interfaces and journal record stayed for good).
func TestLeftoverGivenBackAfterTheGracePeriodIsReleased(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	onlyB, _ := previousLife(t, client, journalDir, vppConn, fwdNetns)
	held := &holdsRequests{id: "conn-a", arrived: make(chan struct{}), release: make(chan struct{})}
	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns, held)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const grace = 300 * time.Millisecond
	second.leftovers.ExpireAfter(ctx, grace)
	second.request(t, client.connection("conn-b", "nsm-b", 2))
	failed := make(chan error, 1)
	go func() {
		_, err := second.chain.Request(context.Background(), &networkservice.NetworkServiceRequest{Connection: client.connection("conn-a", "nsm-a", 1)})
		failed <- err
	}()
	<-held.arrived
	time.Sleep(2 * grace)
	require.Equal(t, []string{"conn-a", "conn-b"}, recordIDs(t, journalDir), "a claimed leftover was released under its Request")
	close(held.release)
	require.Error(t, <-failed)

	require.Eventually(t, func() bool { return len(recordIDs(t, journalDir)) == 1 }, 5*time.Second, 20*time.Millisecond,
		"the leftover given back after its grace period ended is never released")
	require.Equal(t, []string{"conn-b"}, recordIDs(t, journalDir))
	require.Equal(t, onlyB, client.marked(t))
}

// A connection that did not come back left its leftover while a new connection of the same pod
// took its interface name (its veth was replaced): the leftover's release must remove what the
// old connection left and nothing of the new one's, whose routes leave through a link that only
// shares the recorded name.
func TestReleaseLeavesTheRoutesOfALinkThatTookTheRecordedName(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	onlyB, _ := previousLife(t, client, journalDir, vppConn, fwdNetns)

	second := startForwarderRun(t, client, journalDir, vppConn, fwdNetns)
	second.request(t, client.connection("conn-b", "nsm-b", 2))
	old, err := client.handle.LinkByName("nsm-a")
	require.NoError(t, err)
	require.NoError(t, client.handle.LinkDel(old))
	client.addInterface(t, "nsm-a")
	successor := client.connection("conn-z", "nsm-a", 3)
	second.request(t, successor)
	var expected []string
	for _, line := range client.marked(t) {
		if !strings.Contains(line, "172.16.1.") {
			expected = append(expected, line)
		}
	}
	require.Len(t, expected, 8, "conn-b's state and conn-z's: %v", client.marked(t))

	require.NoError(t, second.leftovers.ReleaseAll(context.Background()))
	require.Equal(t, []string{"conn-b", "conn-z"}, recordIDs(t, journalDir))
	require.Equal(t, expected, client.marked(t), "the release of conn-a touched conn-z's state or left some of its own")
	_, err = second.chain.Close(context.Background(), successor)
	require.NoError(t, err)
	require.Equal(t, onlyB, client.marked(t))
}
