package e2e_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/domain"
)

// vl3-dns's checks. Upstream's client (cmd-nsc) writes the DNS config its connection brings
// into the pod's resolv.conf, through a local DNS proxy; the harness's client does not, so the
// test writes that config as the pod's resolv.conf itself (/etc/netns/<pod>/resolv.conf, which
// `ip netns exec` puts in place of /etc/resolv.conf) and the pod's own resolver asks the
// endpoint's DNS server directly. Names are upstream's: the pod name and the service
// (`nsc-vl3-1.vl3-dns`).

// requireNamePings has every client ping every client and both endpoints by name (`ping -4
// -c2 -i 0.5`), look each name up and the address back (upstream's nslookup A then PTR).
func (r *vl3Run) requireNamePings(ctx context.Context, t *testing.T) {
	t.Helper()
	want := map[string]string{}
	for _, c := range r.clients {
		want[c.Name+"."+r.service] = vl3ClientAddrs(t, c, 1)[0]
	}
	for _, e := range r.endpoints {
		want[e.Name+"."+r.service] = r.endpointNameAddr(t, e.Name)
	}
	for _, pinger := range r.clients {
		useConnectionDNS(t, pinger)
		for name, addr := range want {
			out, err := exec.CommandContext(ctx, "ip", "netns", "exec", pinger.Pod.Netns,
				"ping", "-4", "-c", "2", "-i", "0.5", "-W", "2", name).CombinedOutput()
			require.NoError(t, err, "%s pings %s:\n%s", pinger.Name, name, out)
			resolved := podLookup(ctx, t, pinger.Pod.Netns, "ahostsv4", name)
			require.Equal(t, addr, strings.Fields(resolved)[0], "%s looks %s up", pinger.Name, name)
			back := podLookup(ctx, t, pinger.Pod.Netns, "hosts", addr)
			require.Equal(t, name, strings.Fields(back)[1], "%s looks %s back up", pinger.Name, addr)
		}
	}
}

// podLookup is getent's first line for key in database, from the pod's resolver.
func podLookup(ctx context.Context, t *testing.T, netns, database, key string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", netns, "getent", database, key).CombinedOutput()
	require.NoError(t, err, "getent %s %s in %s:\n%s", database, key, netns, out)
	return firstLine(string(out))
}

// useConnectionDNS makes the client's connection's DNS config its pod's resolv.conf, as
// upstream's client does, until the test ends.
func useConnectionDNS(t *testing.T, c *domain.Client) {
	t.Helper()
	var conf strings.Builder
	var search []string
	for _, config := range c.Connections[0].GetContext().GetDnsContext().GetConfigs() {
		for _, server := range config.GetDnsServerIps() {
			conf.WriteString("nameserver " + server + "\n")
		}
		search = append(search, config.GetSearchDomains()...)
	}
	require.NotEmpty(t, conf.String(), "%s's connection brings no DNS server", c.Name)
	if len(search) > 0 {
		conf.WriteString("search " + strings.Join(search, " ") + "\n")
	}
	dir := filepath.Join("/etc/netns", c.Pod.Netns)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() {
		require.NoError(t, os.RemoveAll(dir))
		// Left to whoever else uses it, if anyone does.
		if err := os.Remove("/etc/netns"); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Logf("/etc/netns kept: %v", err)
		}
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte(conf.String()), 0o644))
}
