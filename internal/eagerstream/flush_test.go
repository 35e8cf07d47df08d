package eagerstream_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"

	"github.com/nsmfwd/forwarder-vpp/internal/eagerstream"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

// A dump closed after its first detail, as sdk-vpp closes one once it found its interface, must
// leave nothing for the calls after it: govpp hands the closed stream's channel to the next call
// with whatever replies are left in it, and its Invoke decodes the first one as its own reply (a
// forwarder read an interface detail as TapCreateV3's reply and programmed a sw_if_index that was
// no tap).
func TestDumpClosedEarlyLeavesNoReplyForTheNextCall(t *testing.T) {
	vpptest.Each(t, testDumpClosedEarlyLeavesNoReplyForTheNextCall)
}

func testDumpClosedEarlyLeavesNoReplyForTheNextCall(t *testing.T, backend vpptest.Backend) {
	vppConn := vpptest.Start(t, backend, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createLoopbacks(ctx, t, vppConn)

	client := interfaces.NewServiceClient(eagerstream.NewConnection(vppConn))
	const rounds = 30
	for round := range rounds {
		dump, err := client.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{})
		require.NoError(t, err)
		_, err = dump.Recv()
		require.NoError(t, err)
		require.NoError(t, dump.Close())

		created, err := client.CreateLoopback(ctx, &interfaces.CreateLoopback{})
		require.NoError(t, err, "round %d: the call after a dump closed early", round)
		details, err := client.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: created.SwIfIndex})
		require.NoError(t, err)
		detail, err := details.Recv()
		require.NoError(t, err, "round %d: the loopback the call created", round)
		require.Equal(t, created.SwIfIndex, detail.SwIfIndex, "round %d", round)
		require.Contains(t, detail.InterfaceName, "loop", "round %d", round)
		_, err = details.Recv()
		require.Error(t, err, "round %d: one interface of that index", round)
	}
}
