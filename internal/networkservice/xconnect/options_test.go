package xconnect_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/networkservicemesh/sdk/pkg/tools/sandbox"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/mechanisms/kernelif"
	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/xconnect"
	"github.com/nsmfwd/forwarder-vpp/test/vppsim/vppsimtest"
	"github.com/nsmfwd/forwarder-vpp/test/vpptest"
)

func TestNewServerRefusesUnusableSettings(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vpp := startTestVPP(t, vpptest.Sim, vppsimtest.NewNetns(t, netnsPrefix))
	for name, c := range map[string]struct {
		tunnelIP net.IP
		opts     []xconnect.Option
		mentions string
	}{
		"no tunnel IP":          {nil, nil, "tunnel IP"},
		"unspecified tunnel IP": {net.IPv4zero, nil, "0.0.0.0"},
		"unknown kernel kind":   {tunnelIP, []xconnect.Option{xconnect.WithKernelInterface(kernelif.Kind(7))}, "Kind(7)"},
		"no onward URL":         {tunnelIP, []xconnect.Option{xconnect.WithClientURL(nil)}, "onward"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := xconnect.NewServer(ctx, sandbox.GenerateTestToken, vpp, c.tunnelIP, c.opts...)
			require.ErrorContains(t, err, c.mentions)
		})
	}
	_, err := xconnect.NewServer(ctx, sandbox.GenerateTestToken, nil, tunnelIP)
	require.ErrorContains(t, err, "VPP")
}
