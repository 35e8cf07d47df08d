package vppclock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTimeNowReadsVPPsAnswer(t *testing.T) {
	// As VPP v24.10 answers `show clock`, below one second and above.
	seconds, err := parseTimeNow("Time now .695586, Tue, 01 Dec 2026 04:08:05 GMT\nTime last barrier release 0.000000000\n")
	require.NoError(t, err)
	require.InDelta(t, 0.695586, seconds, 1e-9)
	seconds, err = parseTimeNow("Time now 1234.500000, Tue, 01 Dec 2026 04:08:05 GMT\n")
	require.NoError(t, err)
	require.InDelta(t, 1234.5, seconds, 1e-9)

	// As VPP answers a command it does not know.
	_, err = parseTimeNow("show: unknown input `clock'\n")
	require.ErrorIs(t, err, ErrUnreadable)
}

func TestCompareAllowsAPIDelayAndCatchesAClockOffPace(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(vppSeconds float64, askedMs, answeredMs int) reading {
		return reading{
			vppSeconds: vppSeconds,
			asked:      start.Add(time.Duration(askedMs) * time.Millisecond),
			answered:   start.Add(time.Duration(answeredMs) * time.Millisecond),
		}
	}
	// Two readings 100 ms apart, each answered within 50 ms: VPP may have read its clock anywhere
	// in those 50 ms, so 50 to 200 ms between them is the kernel's pace.
	first := at(10, 0, 50)
	for _, keptPace := range []float64{10.050, 10.1, 10.2} {
		require.NoError(t, compare(first, at(keptPace, 100, 200)), "VPP at %.3f", keptPace)
	}
	for _, offPace := range []struct {
		vppSeconds, rate float64
	}{
		{10.3, 2.4},       // 300 ms against at most 200
		{310, 2400},       // a 300 ms stall over a 1 ms estimate
		{10.03, 0.24},     // 30 ms against at least 50
		{10.0001, 0.0008}, // a clock that stalls
	} {
		err := compare(first, at(offPace.vppSeconds, 100, 200))
		var clockErr *Error
		require.ErrorAs(t, err, &clockErr, "VPP at %.4f", offPace.vppSeconds)
		require.InEpsilon(t, offPace.rate, clockErr.Rate, 1e-6, "rate against the midpoint of 50 and 200 ms")
	}
}
