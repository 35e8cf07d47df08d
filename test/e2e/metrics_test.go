package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netns"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// metrics is one scrape of a forwarder's /metrics.
type metrics map[string]*dto.MetricFamily

// scrape reads node's forwarder's /metrics, served inside the node's namespace.
func scrape(t *testing.T, node *domain.Node) metrics {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			return dialIn(ctx, node.Netns, network, address)
		},
	}}
	var body []byte
	require.Eventually(t, func() bool {
		response, err := client.Get("http://" + metricsAddress + "/metrics")
		if err != nil {
			return false
		}
		defer func() { _ = response.Body.Close() }()
		body, err = io.ReadAll(response.Body)
		return err == nil && response.StatusCode == http.StatusOK
	}, 10*time.Second, 100*time.Millisecond, "no /metrics at %s in %s", metricsAddress, node.Netns)
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err)
	return families
}

// dialIn dials from inside the named namespace: the socket stays there once the thread leaves.
func dialIn(ctx context.Context, netnsName, network, address string) (conn net.Conn, err error) {
	err = inNamespace(netnsName, func() error {
		var dialer net.Dialer
		conn, err = dialer.DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// inNamespace runs do on this goroutine's thread moved into the named namespace, and moves the
// thread back; sockets do makes stay in that namespace.
func inNamespace(netnsName string, do func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	original, err := netns.Get()
	if err != nil {
		return err
	}
	defer func() { _ = original.Close() }()
	target, err := netns.GetFromName(netnsName)
	if err != nil {
		return err
	}
	defer func() { _ = target.Close() }()
	if err = netns.Set(target); err != nil {
		return err
	}
	doErr := do()
	return errors.Join(doErr, netns.Set(original))
}

// sum adds up the family's samples whose labels include the given name/value pairs.
func (m metrics) sum(name string, labels ...string) float64 {
	family, ok := m[name]
	if !ok {
		return 0
	}
	total := 0.0
	for _, metric := range family.GetMetric() {
		if hasLabels(metric, labels) {
			total += value(metric)
		}
	}
	return total
}

func (m metrics) requireAtLeast(t *testing.T, least float64, name string, labels ...string) {
	t.Helper()
	got := m.sum(name, labels...)
	require.GreaterOrEqual(t, got, least, "%s%v: %v; the forwarder's metrics:\n%s", name, labels, got, m.lines("forwarder_vpp_"))
}

// lines renders the families whose name starts with prefix, one sample a line.
func (m metrics) lines(prefix string) string {
	var out []string
	for name, family := range m {
		if !strings.HasPrefix(name, prefix) || strings.HasSuffix(name, "_bucket") {
			continue
		}
		for _, metric := range family.GetMetric() {
			var labels []string
			for _, l := range metric.GetLabel() {
				if !strings.HasPrefix(l.GetName(), "otel_") {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
			}
			out = append(out, fmt.Sprintf("  %s{%s} %v", name, strings.Join(labels, ","), value(metric)))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func hasLabels(metric *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range metric.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func value(metric *dto.Metric) float64 {
	switch {
	case metric.GetCounter() != nil:
		return metric.GetCounter().GetValue()
	case metric.GetGauge() != nil:
		return metric.GetGauge().GetValue()
	case metric.GetHistogram() != nil:
		return float64(metric.GetHistogram().GetSampleCount())
	case metric.GetUntyped() != nil:
		return metric.GetUntyped().GetValue()
	}
	return 0
}
