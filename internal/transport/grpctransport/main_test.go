package grpctransport_test

import (
	"testing"

	"github.com/nsmfwd/forwarder-vpp/test/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}
