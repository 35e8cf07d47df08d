package linkroutes_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/networkservicemesh/api/pkg/api/networkservice"
	"github.com/networkservicemesh/sdk/pkg/networkservice/core/next"

	"github.com/nsmfwd/forwarder-vpp/internal/networkservice/linkroutes"
)

// podNetwork gives the namespace what a pod has before any NSM connection: eth0 with an address, a default
// route and a route to the pod network through it, installed by someone else (proto boot).
func (c *clientNamespace) podNetwork(t *testing.T) {
	t.Helper()
	run(t, "ip", "-n", c.name, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0p")
	run(t, "ip", "-n", c.name, "link", "set", "eth0p", "up")
	run(t, "ip", "-n", c.name, "link", "set", "eth0", "up")
	run(t, "ip", "-n", c.name, "addr", "add", "10.244.1.5/24", "dev", "eth0")
	run(t, "ip", "-n", c.name, "-6", "addr", "add", "fd10::5/64", "dev", "eth0", "nodad")
	run(t, "ip", "-n", c.name, "route", "add", "default", "via", "10.244.1.1", "dev", "eth0")
	run(t, "ip", "-n", c.name, "route", "add", "10.244.0.0/16", "via", "10.244.1.1", "dev", "eth0")
	run(t, "ip", "-n", c.name, "-6", "route", "add", "default", "via", "fd10::1", "dev", "eth0")
}

// mainTable is the namespace's main table in both families, as ip prints it.
func (c *clientNamespace) mainTable(t *testing.T) string {
	t.Helper()
	var out strings.Builder
	for _, family := range []string{"-4", "-6"} {
		text, err := exec.Command("ip", "-n", c.name, family, "route", "show", "table", "main").CombinedOutput()
		if err != nil {
			t.Fatalf("ip route: %v: %s", err, text)
		}
		out.Write(text)
	}
	return out.String()
}

// A route of the IP context whose slot (destination and metric) holds a route the forwarder did not install
// fails the Request, and the namespace's route stays as it was: before, its default route and its route to the
// pod network were overwritten and then deleted on Close.
func TestForeignRoutesAreNeverReplaced(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		route       *networkservice.Route
	}{
		{"IPv4 default route", "ip_context.src_routes", route("0.0.0.0/0", "")},
		{"pod network", "ip_context.src_routes", route("10.244.0.0/16", "172.16.0.1")},
		{"IPv6 default route", "ip_context.src_routes", route("::/0", "fd00::1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClientNamespace(t)
			c.podNetwork(t)
			before := c.mainTable(t)

			var closes int
			server := newServerCountingCloses(&closes)
			_, err := server.Request(context.Background(), c.request(route("10.10.0.0/16", ""), tc.route))
			if status.Code(err) != codes.FailedPrecondition {
				t.Fatalf("err = %v, want FailedPrecondition", err)
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, tc.field) || !strings.Contains(msg, "did not install") {
				t.Errorf("the error names neither the field nor the reason: %s", msg)
			}
			if closes != 1 {
				t.Errorf("the rest of the chain was closed %d times, want 1: nothing may stay half-applied", closes)
			}
			if after := c.mainTable(t); after != before {
				t.Errorf("main table changed:\n%s\nwant\n%s", after, before)
			}
		})
	}
}

// A foreign route of another metric is no obstacle: both stay, and Close removes only the forwarder's.
func TestForeignRouteOfAnotherMetricStaysThroughClose(t *testing.T) {
	c := newClientNamespace(t)
	c.podNetwork(t)
	run(t, "ip", "-n", c.name, "route", "add", "10.20.0.0/16", "via", "10.244.1.1", "dev", "eth0", "metric", "100")
	before := c.mainTable(t)
	server := newServer()
	conn, err := server.Request(context.Background(), c.request(route("10.20.0.0/16", "")))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.routes(t); len(got) != 2 || !strings.HasPrefix(got[0], "10.20.0.0/16 via 172.16.0.1 proto 250") {
		t.Fatalf("routes through the connection = %q", got)
	}
	if _, err := server.Close(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	if after := c.mainTable(t); after != before {
		t.Errorf("after Close the main table is\n%s\nwant\n%s", after, before)
	}
}

// When the interface loses its last IPv4 address, the kernel drops every IPv4 route through it without a
// notification; the next Request puts them back.
func TestRoutesComeBackAfterTheKernelFlushedThem(t *testing.T) {
	c := newClientNamespace(t)
	server := newServer()
	request := c.request(route("10.10.0.0/16", ""), route("10.20.0.0/16", "172.16.0.9"))
	run(t, "ip", "-n", c.name, "addr", "add", "172.16.0.2/32", "dev", ifName)
	if _, err := server.Request(context.Background(), request); err != nil {
		t.Fatal(err)
	}
	want := c.routes(t)
	run(t, "ip", "-n", c.name, "addr", "del", "172.16.0.2/32", "dev", ifName)
	if got := c.routes(t); len(got) != 0 {
		t.Fatalf("the kernel kept %q", got)
	}
	run(t, "ip", "-n", c.name, "addr", "add", "172.16.0.3/32", "dev", ifName)
	if _, err := server.Request(context.Background(), request); err != nil {
		t.Fatal(err)
	}
	if got := c.routes(t); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("routes = %q, want %q", got, want)
	}
}

// closeCounter ends a test chain, standing for the elements after linkroutes, and counts the Closes that
// reach it.
type closeCounter struct{ closes *int }

func (c closeCounter) Request(_ context.Context, request *networkservice.NetworkServiceRequest) (*networkservice.Connection, error) {
	return request.GetConnection(), nil
}

func (c closeCounter) Close(context.Context, *networkservice.Connection) (*emptypb.Empty, error) {
	*c.closes++
	return &emptypb.Empty{}, nil
}

func newServerCountingCloses(closes *int) networkservice.NetworkServiceServer {
	return next.NewNetworkServiceServer(linkroutes.NewServer(), closeCounter{closes: closes})
}
