package registrylookup_test

import (
	"testing"

	"github.com/nsmfwd/forwarder-vpp/test/leaktest"
)

// The fake nsmgr sends endpoint URLs over grpcfd, as a stock nsmgr does.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, leaktest.GrpcfdQueuedSend)
}
