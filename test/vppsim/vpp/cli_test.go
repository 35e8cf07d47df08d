package vpp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// As VPP v24.10 prints its clock (TestCLIAnswersAsVPP compares the two in their first second;
// past it, format_float writes the integer part as C does).
func TestShowClockWritesSecondsAsVPP(t *testing.T) {
	at := time.Date(2026, 12, 1, 5, 8, 5, 0, time.FixedZone("CET", 3600))
	require.Equal(t, "Time now .745407, Tue, 01 Dec 2026 04:08:05 GMT\n"+
		"Time last barrier release 0.000000000\n"+
		"0: Time now .745407\n"+
		"Thread 0 offset 0.000000000 error 0.000000000\n", ShowClock(745407*time.Microsecond, at))
	require.Contains(t, ShowClock(1234500*time.Millisecond, at), "Time now 1234.500000, ")
	require.Equal(t, "0.000000", vppFloat(0, 6))
}
