package eagerstream_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	interfaces "github.com/networkservicemesh/govpp/binapi/interface"
	"github.com/networkservicemesh/govpp/binapi/memclnt"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/eagerstream"
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

// pingCounter counts the control pings sent on its connection's streams.
type pingCounter struct {
	api.Connection
	pings atomic.Int32
}

func (c *pingCounter) NewStream(ctx context.Context, options ...api.StreamOption) (api.Stream, error) {
	inner, err := c.Connection.NewStream(ctx, options...)
	return &countingStream{Stream: inner, pings: &c.pings}, err
}

type countingStream struct {
	api.Stream
	pings *atomic.Int32
}

func (s *countingStream) SendMsg(msg api.Message) error {
	if _, isPing := msg.(*memclnt.ControlPing); isPing {
		s.pings.Add(1)
	}
	return s.Stream.SendMsg(msg)
}

// A dump read to its end ends with the reply to binapi's own control ping, after which VPP owes
// the stream nothing: closing it sends no second ping. (A dump closed before its end is flushed:
// TestDumpClosedEarlyLeavesNoReplyForTheNextCall.)
func TestDumpReadToItsEndIsNotFlushed(t *testing.T) {
	vpptest.Each(t, func(t *testing.T, backend vpptest.Backend) {
		vppConn := vpptest.Start(t, backend, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for range 3 {
			_, err := interfaces.NewServiceClient(vppConn).CreateLoopback(ctx, &interfaces.CreateLoopback{})
			require.NoError(t, err)
		}
		counter := &pingCounter{Connection: vppConn}
		client := interfaces.NewServiceClient(eagerstream.NewConnection(counter))

		for round := 1; round <= 3; round++ {
			dump, err := client.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{})
			require.NoError(t, err)
			details := 0
			for {
				if _, err = dump.Recv(); err != nil {
					break
				}
				details++
			}
			// binapi's Recv closes the stream itself when it reads the ping's reply.
			require.ErrorIs(t, err, io.EOF)
			require.GreaterOrEqual(t, details, 3)
			require.Equal(t, int32(round), counter.pings.Load(), "a dump read to its end was flushed")
		}
	})
}
