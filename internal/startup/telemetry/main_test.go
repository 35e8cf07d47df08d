package telemetry_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/nsmfwd/forwarder-vpp/test/leaktest"
)

// sdk v1.18's Prometheus server never ends: once its context is done, the loop that (re)starts
// its HTTP server gets ErrServerClosed and calls ListenAndServe again, forever. It happens only
// after the forwarder's shutdown, just before the process exits.
func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/networkservicemesh/sdk/pkg/tools/prometheus.(*Server).start.func1"))
}
