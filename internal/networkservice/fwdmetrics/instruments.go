package fwdmetrics

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// meterName is the instrumentation scope of every instrument here.
const meterName = "github.com/nsmfwd/forwarder-vpp"

// Kinds of leftovers, besides the VPP interface kinds (tap, af_packet, vxlan, ...).
const (
	// KindConnection is a connection the journal holds from a previous run.
	KindConnection = "connection"
	// KindVeth is the forwarder's end of a veth pair.
	KindVeth = "veth"
	// KindKernelState is a connection's rules and routes in a client namespace.
	KindKernelState = "kernel_state"
)

// Kinds of rule and route writes.
const (
	// WriteAdopted is a rule or route found exactly as wanted and kept: no write.
	WriteAdopted  = "adopted"
	WriteAdded    = "added"
	WriteReplaced = "replaced"
	WriteDeleted  = "deleted"
)

// Why a connection's data plane was released without a Close from its client.
const (
	// ExpiryRestartGrace: a previous run's connection not requested again within the token lifetime.
	ExpiryRestartGrace = "restart_grace"
	// ExpiryToken: a live connection whose token expired without a Close reaching the forwarder.
	ExpiryToken = "token_expiry"
)

// How a broken upstream monitor stream ended.
const (
	MonitorResubscribed = "resubscribed"
	MonitorReportedDown = "down"
)

type instruments struct {
	leftoversFound, leftoversAdopted, leftoversReleased metric.Int64Counter
	journalRecords                                      metric.Int64UpDownCounter
	journalWrites                                       metric.Int64Counter
	policyRouteWrites, linkRouteWrites                  metric.Int64Counter
	expiryReleases                                      metric.Int64Counter
	monitorBreaks                                       metric.Int64Counter
	descriptorsRefused                                  metric.Int64Counter
	descriptorsHeld                                     metric.Int64UpDownCounter
	journalWritable                                     metric.Int64Gauge
	requestDuration, closeDuration                      metric.Float64Histogram
}

// latencyBuckets span a refresh that changes nothing (milliseconds) to a Request that waits on a
// dead next hop's dial timeout or builds tunnels (seconds).
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

var (
	once sync.Once
	all  instruments
)

// get creates the instruments on first use. The global meter hands out delegates that start
// recording once the sdk sets the real provider, so the order of start-up does not matter.
func get() *instruments {
	once.Do(func() {
		m := otel.Meter(meterName)
		for _, c := range []struct {
			into              *metric.Int64Counter
			name, description string
		}{
			{&all.leftoversFound, "forwarder_vpp_leftovers_found", "Objects of a previous run found at start-up, by kind: journal connections, their VPP interfaces, the forwarder's veth ends"},
			{&all.leftoversAdopted, "forwarder_vpp_leftovers_adopted", "VPP interfaces of a previous run handed back to their connection as they were, by kind"},
			{&all.leftoversReleased, "forwarder_vpp_leftovers_released", "Objects of a previous run or of a failed Request released, by kind"},
			{&all.journalWrites, "forwarder_vpp_journal_writes", "Journal record writes and removals, by result (ok, error)"},
			{&all.policyRouteWrites, "forwarder_vpp_policyroute_writes", "Policy rules and their table's routes reconciled in client namespaces, by kind (adopted, added, replaced, deleted)"},
			{&all.linkRouteWrites, "forwarder_vpp_linkroute_writes", "Main-table routes through a connection's interface reconciled, by kind (adopted, added, replaced, deleted)"},
			{&all.expiryReleases, "forwarder_vpp_expiry_releases", "Connections released without a Close from their client, by reason (restart_grace, token_expiry)"},
			{&all.monitorBreaks, "forwarder_vpp_monitor_breaks", "Broken upstream monitor streams, by outcome: resubscribed (hidden) or down (passed on, reported DOWN)"},
			{&all.descriptorsRefused, "forwarder_vpp_descriptors_refused", "File descriptors a peer passed that were closed at once, by reason (unauthenticated, peer_limit, total_limit)"},
		} {
			*c.into, _ = m.Int64Counter(c.name, metric.WithDescription(c.description))
		}
		all.journalRecords, _ = m.Int64UpDownCounter("forwarder_vpp_journal_records", metric.WithDescription("Connection records the journal holds"))
		all.descriptorsHeld, _ = m.Int64UpDownCounter("forwarder_vpp_descriptors_held", metric.WithDescription("File descriptors received from peers and held for their calls to claim"))
		all.journalWritable, _ = m.Int64Gauge("forwarder_vpp_journal_writable",
			metric.WithDescription("1 while the journal is written to NSM_STATE_DIR, 0 while the directory is not writable and restart recovery is off"))
		all.requestDuration, _ = m.Float64Histogram("forwarder_vpp_request_duration", metric.WithUnit("s"),
			metric.WithDescription("Duration of Requests through the forwarder's chain, by result (ok, error)"), metric.WithExplicitBucketBoundaries(latencyBuckets...))
		all.closeDuration, _ = m.Float64Histogram("forwarder_vpp_close_duration", metric.WithUnit("s"),
			metric.WithDescription("Duration of Closes through the forwarder's chain, by result (ok, error)"), metric.WithExplicitBucketBoundaries(latencyBuckets...))
	})
	return &all
}

func add(ctx context.Context, counter metric.Int64Counter, n int, key, value string) {
	if n == 0 || counter == nil {
		return
	}
	counter.Add(ctx, int64(n), metric.WithAttributes(attribute.String(key, value)))
}

// LeftoversFound counts n leftovers of kind found at start-up.
func LeftoversFound(ctx context.Context, kind string, n int) {
	add(ctx, get().leftoversFound, n, "kind", kind)
}

// LeftoverAdopted counts one VPP interface of kind adopted.
func LeftoverAdopted(ctx context.Context, kind string) {
	add(ctx, get().leftoversAdopted, 1, "kind", kind)
}

// LeftoverReleased counts one leftover of kind released.
func LeftoverReleased(ctx context.Context, kind string) {
	add(ctx, get().leftoversReleased, 1, "kind", kind)
}

// JournalRecords adds delta to the number of records the journal holds.
func JournalRecords(ctx context.Context, delta int) {
	if i := get().journalRecords; delta != 0 && i != nil {
		i.Add(ctx, int64(delta))
	}
}

// JournalWrite counts one journal write or removal and whether it failed.
func JournalWrite(ctx context.Context, err error) {
	add(ctx, get().journalWrites, 1, "result", result(err))
}

// DescriptorsRefused counts n received descriptors closed at once for reason.
func DescriptorsRefused(ctx context.Context, reason string, n int) {
	add(ctx, get().descriptorsRefused, n, "reason", reason)
}

// DescriptorsHeld adds delta to the number of received descriptors held.
func DescriptorsHeld(ctx context.Context, delta int) {
	if i := get().descriptorsHeld; delta != 0 && i != nil {
		i.Add(ctx, int64(delta))
	}
}

// JournalWritable records whether the journal is written to disk (restart recovery on).
func JournalWritable(ctx context.Context, writable bool) {
	if i := get().journalWritable; i != nil {
		value := int64(0)
		if writable {
			value = 1
		}
		i.Record(ctx, value)
	}
}

// Kinder is a write that says which kind it is (routeview.Op).
type Kinder interface{ Kind() string }

// PolicyRouteWrites counts the policy rules and routes one reconciliation adopted and wrote.
func PolicyRouteWrites[W Kinder](ctx context.Context, adopted int, writes []W) {
	countWrites(ctx, get().policyRouteWrites, adopted, writes)
}

// LinkRouteWrites counts the main-table routes one reconciliation adopted and wrote.
func LinkRouteWrites[W Kinder](ctx context.Context, adopted int, writes []W) {
	countWrites(ctx, get().linkRouteWrites, adopted, writes)
}

func countWrites[W Kinder](ctx context.Context, counter metric.Int64Counter, adopted int, writes []W) {
	add(ctx, counter, adopted, "kind", WriteAdopted)
	for _, w := range writes {
		add(ctx, counter, 1, "kind", w.Kind())
	}
}

// ExpiryRelease counts one connection released for reason.
func ExpiryRelease(ctx context.Context, reason string) {
	add(ctx, get().expiryReleases, 1, "reason", reason)
}

// MonitorBreak counts one broken monitor stream and its outcome.
func MonitorBreak(ctx context.Context, outcome string) {
	add(ctx, get().monitorBreaks, 1, "outcome", outcome)
}

func recordDuration(ctx context.Context, h metric.Float64Histogram, since time.Time, err error) {
	if h != nil {
		h.Record(ctx, time.Since(since).Seconds(), metric.WithAttributes(attribute.String("result", result(err))))
	}
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
