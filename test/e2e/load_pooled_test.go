package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pooledTable is each forwarder's latencies at each N over all rounds together, and in how many
// of the rounds that ran all the forwarders (their number) its refresh median was the lowest.
func pooledTable(rows []loadFigures, forwarders int) string {
	type key struct {
		n         int
		forwarder string
	}
	type roundKey struct{ n, round int }
	type samples struct {
		rounds         int
		first, refresh []time.Duration
	}
	pooled := map[key]*samples{}
	var order []key
	refreshMedians := map[roundKey]map[string]time.Duration{}
	for _, r := range rows {
		k := key{r.n, r.forwarder}
		p, seen := pooled[k]
		if !seen {
			p = &samples{}
			pooled[k] = p
			order = append(order, k)
		}
		p.rounds++
		p.first = append(p.first, r.firstSamples...)
		p.refresh = append(p.refresh, r.refreshSamples...)
		rk := roundKey{r.n, r.round}
		if refreshMedians[rk] == nil {
			refreshMedians[rk] = map[string]time.Duration{}
		}
		refreshMedians[rk][r.forwarder] = r.refresh.p50
	}
	lowest, compared := map[key]int{}, map[int]int{}
	for rk, medians := range refreshMedians {
		if len(medians) < forwarders {
			continue
		}
		compared[rk.n]++
		if winner, unique := lowestOf(medians); unique {
			lowest[key{rk.n, winner}]++
		}
	}

	var s strings.Builder
	s.WriteString("| N | forwarder | rounds | first Request in the forwarder, p50 / p99 | refresh in the forwarder, p50 / p99 | rounds with the lowest refresh median |\n")
	s.WriteString("|---|---|---|---|---|---|\n")
	for _, k := range order {
		p := pooled[k]
		first, refresh := latenciesOf(p.first), latenciesOf(p.refresh)
		fmt.Fprintf(&s, "| %d | %s | %d | %.1f / %.1f ms (n=%d) | %.1f / %.1f ms (n=%d) | %d of %d |\n",
			k.n, k.forwarder, p.rounds, ms(first.p50), ms(first.p99), first.count, ms(refresh.p50), ms(refresh.p99), refresh.count,
			lowest[k], compared[k.n])
	}
	return s.String()
}

// lowestOf is the name with the lowest value, and whether no other name has that value.
func lowestOf(values map[string]time.Duration) (name string, unique bool) {
	first := true
	for candidate, value := range values {
		switch {
		case first || value < values[name]:
			name, unique, first = candidate, true, false
		case value == values[name]:
			unique = false
		}
	}
	return name, unique
}

func TestPooledTablePoolsSamplesAndCountsLowestMedians(t *testing.T) {
	row := func(round int, forwarder string, refresh ...time.Duration) loadFigures {
		return loadFigures{forwarder: forwarder, round: round, n: 10, refresh: latenciesOf(refresh), refreshSamples: refresh}
	}
	rows := []loadFigures{
		row(1, "forwarder-vpp", 10*time.Millisecond, 30*time.Millisecond),
		row(1, "stock", 20*time.Millisecond, 40*time.Millisecond),
		row(2, "forwarder-vpp", 50*time.Millisecond, 55*time.Millisecond),
		row(2, "stock", 60*time.Millisecond, 60*time.Millisecond),
		row(3, "forwarder-vpp", 10*time.Millisecond), // stock's run of round 3 failed: not compared
	}
	table := pooledTable(rows, 2)
	require.Contains(t, table, "| 10 | forwarder-vpp | 3 | 0.0 / 0.0 ms (n=0) | 30.0 / 55.0 ms (n=5) | 2 of 2 |")
	require.Contains(t, table, "| 10 | stock | 2 | 0.0 / 0.0 ms (n=0) | 60.0 / 60.0 ms (n=4) | 0 of 2 |")
}
