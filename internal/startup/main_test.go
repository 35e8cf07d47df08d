package startup

import (
	"testing"

	"github.com/nsmfwd/forwarder-vpp/test/leaktest"
)

// The own-VPP tests start VPP as the forwarder does (vpphelper).
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, leaktest.VPPOutputScanner)
}
