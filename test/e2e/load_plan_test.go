package e2e_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// refreshTimes is when each client's connections refresh, offsets from the clients' last first
// Requests, as e2e-nsc's paced refresh reads the plan's variables.
func refreshTimes(t *testing.T, plan refreshPlan, n, processes int) []time.Duration {
	t.Helper()
	var times []time.Duration
	for p := range processes {
		vars := map[string]time.Duration{}
		for _, kv := range plan.env(p, processes, n) {
			name, value, _ := strings.Cut(kv, "=")
			d, err := time.ParseDuration(value)
			require.NoError(t, err, kv)
			vars[name] = d
		}
		for k := 0; p+k*processes < n; k++ {
			times = append(times, vars["NSM_REFRESH_AFTER"]+time.Duration(k)*vars["NSM_REFRESH_SPACING"])
		}
	}
	slices.Sort(times)
	return times
}

func TestPacedRefreshesOfAllClientsFallEvenlyOverThePeriod(t *testing.T) {
	plan := refreshPlan{after: 12 * time.Second, period: 20 * time.Second}
	for _, n := range []int{10, 100, 500} {
		times := refreshTimes(t, plan, n, min(n, loadMaxClients))
		require.Len(t, times, n)
		require.Equal(t, plan.after, times[0], "N=%d: the first refresh", n)
		gap := plan.period / time.Duration(n)
		for i := 1; i < n; i++ {
			require.Equal(t, gap, times[i]-times[i-1], "N=%d: refreshes %d and %d", n, i-1, i)
		}
	}
}

func TestSDKRefreshPlanSetsNothing(t *testing.T) {
	require.Empty(t, refreshPlan{}.env(0, 10, 100))
	plan, err := loadRefresh("sdk")
	require.NoError(t, err)
	require.Zero(t, plan)
	require.Equal(t, loadLifetime/5, plan.traceDelay(), "the sdk's refreshes start a fifth of the lifetime in")
	paced, err := loadRefresh("")
	require.NoError(t, err)
	require.Greater(t, paced.traceDelay(), paced.after, "the paced refreshes start after the first Requests and then after")
	_, err = loadRefresh("burst")
	require.ErrorContains(t, err, "E2E_LOAD_REFRESH")
}

func TestRefreshArrivalRateCountsEachConnectionsSecondRequestToTheForwarder(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	request := func(key, peer string, ms int) domain.Call {
		return domain.Call{Out: true, Method: "Request", Key: key, Peer: peer, Start: at(ms), End: at(ms + 50), OK: true}
	}
	calls := []domain.Call{
		request("a", "fwd", 0), request("b", "fwd", 100),
		request("a", "fwd", 1000), request("b", "fwd", 1500), // the refreshes: 1 more in 0.5 s
		request("a", "fwd", 1700),                         // a's second refresh is not counted
		request("c", "nse", 0), request("c", "nse", 1200), // another peer's
		{Method: "Request", Key: "b", Peer: "load0", Start: at(1400)}, // the client's call to the nsmgr
	}
	require.InDelta(t, 2.0, refreshArrivalRate(calls, "fwd"), 1e-9)
	require.Zero(t, refreshArrivalRate(calls[:3], "fwd"), "one refresh has no rate")
}
