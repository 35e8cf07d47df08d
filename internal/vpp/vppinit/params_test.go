package vppinit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/govpp/binapi/af_packet"
	"github.com/networkservicemesh/govpp/binapi/af_xdp"

	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppinit"
)

func writeParams(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "params.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestReadParamsOverridesOnlyWhatTheFileSets(t *testing.T) {
	params, err := vppinit.ReadParams(writeParams(t, `
AF_PACKET:
    mode: 2
    rxFrameSize: 2048
    flags: 2
AF_XDP:
    mode: 1
    prog: /bin/afxdp.o
`))
	require.NoError(t, err)
	defaults := vppinit.DefaultParams()
	require.Equal(t, af_packet.AF_PACKET_API_MODE_IP, params.AfPacket.Mode)
	require.Equal(t, uint32(2048), params.AfPacket.RxFrameSize)
	require.Equal(t, af_packet.AF_PACKET_API_FLAG_CKSUM_GSO, params.AfPacket.Flags)
	require.Equal(t, defaults.AfPacket.TxFrameSize, params.AfPacket.TxFrameSize)
	require.Equal(t, af_xdp.AF_XDP_API_MODE_COPY, params.AfXdp.Mode)
	require.Equal(t, "/bin/afxdp.o", params.AfXdp.Prog)
	require.Equal(t, defaults.AfXdp.RxqSize, params.AfXdp.RxqSize)
}

// AF_XDP loads the image's own program by default, as the stock forwarder does.
func TestDefaultXDPProgramIsTheImages(t *testing.T) {
	require.Equal(t, "/bin/afxdp.o", vppinit.DefaultParams().AfXdp.Prog)
	params, err := vppinit.ReadParams(writeParams(t, "AF_XDP:\n  mode: 1\n"))
	require.NoError(t, err)
	require.Equal(t, vppinit.DefaultXDPProgram, params.AfXdp.Prog, "a file without prog keeps the default")
}

func TestReadParamsErrors(t *testing.T) {
	cases := map[string]struct{ content, message string }{
		"typo":               {"AF_PACKET:\n  rxFrameSise: 1\n", "field rxFrameSise not found"},
		"bad af_packet mode": {"AF_PACKET:\n  mode: 7\n", "AF_PACKET.mode 7"},
		"bad af_xdp mode":    {"AF_XDP:\n  mode: 3\n", "AF_XDP.mode 3"},
		"no XDP program":     {"AF_XDP:\n  prog: \"\"\n", "AF_XDP.prog is empty"},
		"not a number":       {"AF_PACKET:\n  rxFrameSize: big\n", "not a valid parameter file"},
		"negative":           {"AF_XDP:\n  rxqSize: -1\n", "not a valid parameter file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := vppinit.ReadParams(writeParams(t, tc.content))
			require.ErrorContains(t, err, tc.message)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	_, err := vppinit.ReadParams(filepath.Join(t.TempDir(), "absent.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestModeDecode(t *testing.T) {
	for text, want := range map[string]vppinit.Mode{"AF_PACKET": vppinit.AfPacket, "af_xdp": vppinit.AfXdp, " none ": vppinit.None} {
		var mode vppinit.Mode
		require.NoError(t, mode.Decode(text))
		require.Equal(t, want, mode)
	}
	var mode vppinit.Mode
	require.ErrorContains(t, mode.Decode("DPDK"), "must be AF_PACKET, AF_XDP or NONE")
}
