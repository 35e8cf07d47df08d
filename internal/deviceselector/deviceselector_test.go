package deviceselector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "devices.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestLoadMapsEveryViaLabelToItsDevice(t *testing.T) {
	path := writeFile(t, `---
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
  - name: eth3
    matches:
      - labelSelector:
          - via: gw2
`)
	got, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"gw0": "eth1", "gw1": "eth2", "gw2": "eth3"}, got, "the last device claiming a label wins")
}

func TestLoadAcceptsAnEmptyFile(t *testing.T) {
	got, err := Load(writeFile(t, ""))
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestLoadRejectsBadFilesNamingTheProblem(t *testing.T) {
	for name, c := range map[string]struct{ content, mentions string }{
		"missing name":     {"interfaces:\n  - matches:\n      - labelSelector:\n          - via: gw0\n", "name is empty"},
		"long name":        {"interfaces:\n  - name: a-very-long-device-name\n    matches:\n      - labelSelector:\n          - via: gw0\n", "longer than 15"},
		"no matches":       {"interfaces:\n  - name: eth1\n", "no matches"},
		"no selector":      {"interfaces:\n  - name: eth1\n    matches:\n      - labelSelector: []\n", "no labelSelector"},
		"empty via":        {"interfaces:\n  - name: eth1\n    matches:\n      - labelSelector:\n          - via: \"\"\n", "no via label"},
		"misspelled field": {"interfaces:\n  - name: eth1\n    match:\n      - labelSelector:\n          - via: gw0\n", "match"},
		"not yaml":         {"interfaces: [", "devices.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeFile(t, c.content))
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), c.mentions), "error %q does not mention %q", err, c.mentions)
		})
	}
}

func TestLoadRejectsAnUnreadableFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
	require.ErrorContains(t, err, "absent.yaml")
}
