package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/require"
)

// With NSM_VPP_API_SOCKET the endpoint's data plane is that VPP, and a VPP it cannot reach
// stops the start-up with an error naming the socket, not a kernel data plane in its place.
func TestUnreachableOwnVPPStopsStartUp(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "vpp-api.sock")
	t.Setenv("NSM_VPP_API_SOCKET", socket)
	var cfg config
	require.NoError(t, envconfig.Process("nsm", &cfg))
	plane, err := newDataplane(context.Background(), &cfg)
	require.Nil(t, plane)
	require.ErrorContains(t, err, socket)
}

// As cmd-nse-vl3-vpp's defaults: the peering's data path is checked every 1.2 s, 1 s each.
func TestOwnVPPLivenessCheckDefaults(t *testing.T) {
	var cfg config
	require.NoError(t, envconfig.Process("nsm", &cfg))
	require.Equal(t, "1.2s", cfg.LivenessCheckInterval.String())
	require.Equal(t, "1s", cfg.LivenessCheckTimeout.String())
}
