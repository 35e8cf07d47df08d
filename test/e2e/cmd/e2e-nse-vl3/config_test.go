package main

import (
	"testing"

	"github.com/kelseyhightower/envconfig"
	"github.com/stretchr/testify/require"
)

// NSM_PREFIX_SERVER_URL is a comma-separated list, as in upstream's dual-stack example: one vl3
// IPAM server per family, each asked for a prefix.
func TestPrefixServerURLIsAList(t *testing.T) {
	t.Setenv("NSM_PREFIX_SERVER_URL", "unix:///ipam-v4/ipam.sock,unix:///ipam-v6/ipam.sock")
	var cfg config
	require.NoError(t, envconfig.Process("nsm", &cfg))
	var servers []string
	for _, u := range cfg.PrefixServerURLs {
		servers = append(servers, u.String())
	}
	require.Equal(t, []string{"unix:///ipam-v4/ipam.sock", "unix:///ipam-v6/ipam.sock"}, servers)
}
