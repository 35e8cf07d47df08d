package startup

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/internal/startup/config"
	"github.com/nsmfwd/forwarder-vpp/internal/startup/lifecycle"
	"github.com/nsmfwd/forwarder-vpp/internal/vpp/vppconn"
)

// A stock manifest that sets SR-IOV variables starts this forwarder, which must say, once per
// variable, that it does nothing with them.
func TestEachSetSRIOVVariableIsWarnedOfOnce(t *testing.T) {
	t.Setenv("NSM_SRIOV_CONFIG_FILE", "/var/lib/networkservicemesh/smartnic.config")
	t.Setenv("NSM_PCI_DEVICES_PATH", "/sys/bus/pci/devices")
	t.Setenv("NSM_STATE_DIR", t.TempDir())
	cfg, err := config.Load()
	require.NoError(t, err)

	ctx, logged := captureLog(t, context.Background())
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	noVPP := errors.New("no VPP in this test")
	var phases lifecycle.Lifecycle
	err = Start(ctx, abort, cfg, &phases, func(context.Context, context.Context, string) (*vppconn.Connection, error) {
		return nil, noVPP
	})
	require.ErrorIs(t, err, noVPP)
	phases.Stop(ctx)

	warned := map[string]int{}
	for _, entry := range logged.AllEntries() {
		for _, variable := range config.SRIOVVariables {
			if strings.Contains(entry.Message, variable) {
				require.Equal(t, logrus.WarnLevel, entry.Level, entry.Message)
				require.Contains(t, entry.Message, "SR-IOV is not supported")
				require.Contains(t, entry.Message, "ignored")
				warned[variable]++
			}
		}
	}
	require.Equal(t, map[string]int{"NSM_SRIOV_CONFIG_FILE": 1, "NSM_PCI_DEVICES_PATH": 1}, warned)
}
