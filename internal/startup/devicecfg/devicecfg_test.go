package devicecfg_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/devicecfg"
)

func TestParseMapsEveryViaToItsDevice(t *testing.T) {
	viaToDevice, err := devicecfg.Parse([]byte(`
interfaces:
  - name: eth1
    matches:
      - labelSelector:
          - via: gw0
  - name: eth2
    matches:
      - labelSelector:
          - via: gw1
      - labelSelector:
          - via: gw2
`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"gw0": "eth1", "gw1": "eth2", "gw2": "eth2"}, viaToDevice)
}

func TestEmptyFileIsNoDevices(t *testing.T) {
	viaToDevice, err := devicecfg.Parse(nil)
	require.NoError(t, err)
	require.Empty(t, viaToDevice)
}

func TestBadFiles(t *testing.T) {
	cases := map[string]struct{ content, message string }{
		"no name":           {"interfaces:\n  - matches: []\n", "interfaces[0]: name must be set"},
		"name too long":     {"interfaces:\n  - name: a-very-long-ifname\n", "longer than 15"},
		"no label selector": {"interfaces:\n  - name: eth1\n    matches:\n      - {}\n", "has no labelSelector"},
		"no via":            {"interfaces:\n  - name: eth1\n    matches:\n      - labelSelector:\n          - {}\n", "without via"},
		"via twice":         {"interfaces:\n  - name: eth1\n    matches: [{labelSelector: [{via: gw}]}]\n  - name: eth2\n    matches: [{labelSelector: [{via: gw}]}]\n", `via "gw" is claimed by both eth1 and eth2`},
		"unknown key":       {"interfaces:\n  - name: eth1\n    match: []\n", "field match not found"},
		"not yaml":          {"interfaces: [", "not a valid device selector file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := devicecfg.Parse([]byte(tc.content))
			require.ErrorContains(t, err, tc.message)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestReadFileReportsAMissingFile(t *testing.T) {
	_, err := devicecfg.ReadFile(filepath.Join(t.TempDir(), "absent.yaml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
