package vppclock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp/api"

	"github.com/networkservicemesh/govpp/binapi/vlib"
)

// answeringVPP answers every call with fill, as a VPP of another build might answer show clock.
type answeringVPP struct {
	api.Connection
	fill func(reply api.Message)
}

func (a answeringVPP) Invoke(_ context.Context, _, reply api.Message) error {
	a.fill(reply)
	return nil
}

// Only a clock off pace or a silent VPP is a misstart worth another run; an answer without the
// time is a VPP the check cannot tell about, and it says so instead of starting it three times.
func TestClockAnswerWithoutTheTimeIsNoMisstart(t *testing.T) {
	unreadable := answeringVPP{fill: func(reply api.Message) {
		*reply.(*vlib.CliInbandReply) = vlib.CliInbandReply{Reply: "show: unknown input `clock'\n"}
	}}
	err := CheckStarted(context.Background(), unreadable)
	require.ErrorIs(t, err, ErrUnreadable)
	require.False(t, Misstarted(err), "%v", err)
}
