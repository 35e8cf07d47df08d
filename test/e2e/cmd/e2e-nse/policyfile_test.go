package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The file format of cmd-nse-icmp-responder's policy file: lower-case field
// names, ports as strings or numbers, a route without a next hop.
func TestPoliciesFileReadsTheStockEndpointsFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policies.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
- from: 192.0.2.1/24
  proto: 6
  dstport: 80
  routes:
    - prefix: 198.51.100.0/24
      nexthop: 192.0.2.2
- proto: 17
  srcport: 1000-1010
`), 0o600))
	policies, err := readPoliciesFile(path)
	require.NoError(t, err)
	require.Len(t, policies, 2)
	require.Equal(t, "192.0.2.1/24", policies[0].GetFrom())
	require.Equal(t, "6", policies[0].GetProto())
	require.Equal(t, "80", policies[0].GetDstPort())
	require.Equal(t, "198.51.100.0/24", policies[0].GetRoutes()[0].GetPrefix())
	require.Equal(t, "192.0.2.2", policies[0].GetRoutes()[0].GetNextHop())
	require.Empty(t, policies[1].GetFrom())
	require.Equal(t, "1000-1010", policies[1].GetSrcPort())
}

func TestPoliciesFileErrorNamesTheVariable(t *testing.T) {
	_, err := readPoliciesFile(filepath.Join(t.TempDir(), "absent.yaml"))
	require.ErrorContains(t, err, "NSM_POLICIES_FILE")
}
