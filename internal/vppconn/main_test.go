package vppconn_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/nsmfwd/forwarder-vpp/test/leaktest"
)

// vpphelper hands the VPP it starts a logrus writer that it never closes; its scanner outlives
// VPP. The forwarder starts VPP once and exits when VPP does.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/sirupsen/logrus.(*Entry).writerScanner"))
}
