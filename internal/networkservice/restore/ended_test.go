package restore

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/journal"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/markedroutes"
)

// deadVPP answers nothing, as the socket of a VPP whose process ended.
type deadVPP struct{ api.Connection }

func (deadVPP) Invoke(context.Context, api.Message, api.Message) error {
	return errors.New("VPP is gone")
}

func (deadVPP) NewStream(context.Context, ...api.StreamOption) (api.Stream, error) {
	return nil, errors.New("VPP is gone")
}

// A VPP that does not answer fails a release, which is then retried; once the forwarder knows its
// own VPP ended (and every interface with it), the release does the kernel's part and succeeds.
func TestReleaseThroughAnEndedVPP(t *testing.T) {
	client := newClientNetns(t, "nsm-a", "nsm-b")
	vppConn, fwdNetns, journalDir := testVPP(t), forwarderNetns(t), t.TempDir()
	onlyB, _ := previousLife(t, client, journalDir, vppConn, fwdNetns)
	records, err := journal.Read(journalDir)
	require.NoError(t, err)
	var connA *journal.Record
	for _, rec := range records {
		if rec.ID == "conn-a" {
			connA = rec
		}
	}
	require.NotNil(t, connA)

	ended := NewReleaser(deadVPP{vppConn}, markedroutes.NewServer(), WithForwarderNetns(fwdNetns), WithVPPEnded(func() bool { return true }))
	require.NoError(t, ended.Release(context.Background(), connA))
	require.Equal(t, onlyB, client.marked(t), "conn-a's kernel state outlived the release")

	unknown := NewReleaser(deadVPP{vppConn}, markedroutes.NewServer(), WithForwarderNetns(fwdNetns))
	require.Error(t, unknown.Release(context.Background(), connA), "a VPP that may still hold the interfaces does not answer: the release must fail, to be retried")
}
