package fwdmetrics_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/chain"
	"github.com/networkservicemesh/sdk/pkg/networkservice/utils/inject/injecterror"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/fwdmetrics"
)

type kind string

func (k kind) Kind() string { return string(k) }

// One provider for the process: the instruments are created once, from the global provider.
func TestInstrumentsRecordIntoTheGlobalProvider(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	ctx := context.Background()

	server := chain.NewNetworkServiceServer(fwdmetrics.NewServer(), injecterror.NewServer())
	_, err := server.Request(ctx, &networkservice.NetworkServiceRequest{Connection: &networkservice.Connection{Id: "c"}})
	require.Error(t, err)
	_, err = chain.NewNetworkServiceServer(fwdmetrics.NewServer()).Close(ctx, &networkservice.Connection{Id: "c"})
	require.NoError(t, err)
	fwdmetrics.PolicyRouteWrites(ctx, 2, []kind{"added", "deleted", "added"})
	fwdmetrics.LinkRouteWrites(ctx, 0, []kind{"replaced"})
	fwdmetrics.JournalRecords(ctx, 3)
	fwdmetrics.JournalRecords(ctx, -1)
	fwdmetrics.JournalWrite(ctx, errors.New("disk full"))
	fwdmetrics.LeftoversFound(ctx, fwdmetrics.KindConnection, 0) // nothing found records nothing
	fwdmetrics.DescriptorsRefused(ctx, "peer_limit", 3)
	fwdmetrics.DescriptorsHeld(ctx, 5)
	fwdmetrics.DescriptorsHeld(ctx, -2)
	fwdmetrics.JournalWritable(ctx, false)

	var data metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &data))
	got := map[string]map[string]float64{}
	for _, scope := range data.ScopeMetrics {
		for _, m := range scope.Metrics {
			got[m.Name] = points(m.Data)
		}
	}
	require.Equal(t, map[string]float64{"result=error": 1}, got["forwarder_vpp_request_duration"])
	require.Equal(t, map[string]float64{"result=ok": 1}, got["forwarder_vpp_close_duration"])
	require.Equal(t, map[string]float64{"kind=adopted": 2, "kind=added": 2, "kind=deleted": 1}, got["forwarder_vpp_policyroute_writes"])
	require.Equal(t, map[string]float64{"kind=replaced": 1}, got["forwarder_vpp_linkroute_writes"])
	require.Equal(t, map[string]float64{"": 2}, got["forwarder_vpp_journal_records"])
	require.Equal(t, map[string]float64{"result=error": 1}, got["forwarder_vpp_journal_writes"])
	require.NotContains(t, got, "forwarder_vpp_leftovers_found")
	require.Equal(t, map[string]float64{"reason=peer_limit": 3}, got["forwarder_vpp_descriptors_refused"])
	require.Equal(t, map[string]float64{"": 3}, got["forwarder_vpp_descriptors_held"])
	require.Equal(t, map[string]float64{"": 0}, got["forwarder_vpp_journal_writable"])
}

// points flattens a sum or a histogram into value (count, for a histogram) by its one attribute.
func points(data metricdata.Aggregation) map[string]float64 {
	out := map[string]float64{}
	key := func(set attribute.Set) string {
		for _, kv := range set.ToSlice() {
			return string(kv.Key) + "=" + kv.Value.Emit()
		}
		return ""
	}
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] += float64(p.Value)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] += float64(p.Count)
		}
	}
	return out
}
