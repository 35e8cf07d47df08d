package vppcompat_test

import (
	"context"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.fd.io/govpp"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/vlib"
	"go.fd.io/govpp/core"

	// sdk-vpp uses these, the forwarder does not link them: cnat (sdk-vpp's cnat elements) and
	// ping (its VPP liveness check).
	_ "github.com/networkservicemesh/govpp/binapi/cnat"
	_ "github.com/networkservicemesh/govpp/binapi/ping"

	// Every binapi package the forwarder binary links, through the packages main.go uses.
	_ "github.com/nsmfwd/forwarder-vpp/internal/startup"

	"github.com/nsmfwd/forwarder-vpp/test/realvpp"
)

// forwarderModule is the forwarder's main package, whose binapi dependencies are checked.
const forwarderModule = "github.com/nsmfwd/forwarder-vpp"

// notLinkedByForwarder are binapi packages of sdk-vpp the forwarder does not link.
var notLinkedByForwarder = []string{
	"github.com/networkservicemesh/govpp/binapi/cnat",
	"github.com/networkservicemesh/govpp/binapi/ping",
}

// expectedDifferences are the messages VPP v24.10 as built upstream does not know with the
// CRC the binapi says, and why (docs/vpp.md says what the forwarder does without them). Any
// other difference, or one of these that disappears, fails the test.
var expectedDifferences = map[string]string{
	// NSM's VPP image adds it with a patch; neither the forwarder nor sdk-vpp sends it.
	"get_buffers_stats":       "absent",
	"get_buffers_stats_reply": "absent",
	// The af_xdp plugin is not built (Debian's libbpf is not position-independent): only
	// NSM_VPP_INIT=AF_XDP uses it.
	"af_xdp_create":          "absent",
	"af_xdp_create_reply":    "absent",
	"af_xdp_create_v2":       "absent",
	"af_xdp_create_v2_reply": "absent",
	"af_xdp_create_v3":       "absent",
	"af_xdp_create_v3_reply": "absent",
	"af_xdp_delete":          "absent",
	"af_xdp_delete_reply":    "absent",
}

// expectedSdkOnlyDifferences are the same for the packages only sdk-vpp links.
var expectedSdkOnlyDifferences = map[string]string{
	// NSM's patched ping API: sdk-vpp's VPP liveness check subscribes with it.
	"want_ping_finished_events": "crc differs",
	// The cnat plugin is not built.
}

// linkedPackages lists the packages `go list -deps` says the forwarder binary links: among them
// the binapi packages (networkservicemesh's and govpp's own) and govpp's core, which registers
// control_ping.
func linkedPackages(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", forwarderModule).Output()
	require.NoError(t, err, "go list -deps %s", forwarderModule)
	return strings.Fields(string(out))
}

// registeredMessages groups the binapi messages registered in this test binary by package.
func registeredMessages() map[string][]api.Message {
	byPackage := map[string][]api.Message{}
	for _, types := range api.GetRegisteredMessageTypes() {
		for typ := range types {
			msg := reflect.New(typ.Elem()).Interface().(api.Message)
			byPackage[typ.Elem().PkgPath()] = append(byPackage[typ.Elem().PkgPath()], msg)
		}
	}
	return byPackage
}

// vppMessageNames are the message names VPP's own message table holds (without CRCs).
func vppMessageNames(t *testing.T, conn api.Connection) map[string]bool {
	t.Helper()
	reply := &vlib.CliInbandReply{}
	require.NoError(t, conn.Invoke(context.Background(), &vlib.CliInband{Cmd: "show api message-table"}, reply))
	names := map[string]bool{}
	for _, line := range strings.Split(reply.Reply, "\n") {
		if fields := strings.Fields(line); len(fields) == 2 {
			names[fields[1]] = true
		}
	}
	require.Contains(t, names, "memclnt_create", "the message table did not parse:\n%s", reply.Reply)
	return names
}

// differences checks msgs against VPP and names each incompatible one "absent" or "crc differs".
func differences(t *testing.T, conn *core.Connection, known map[string]bool, msgs []api.Message) map[string]string {
	t.Helper()
	channel, err := conn.NewAPIChannel()
	require.NoError(t, err)
	defer channel.Close()
	found := map[string]string{}
	err = channel.CheckCompatiblity(msgs...)
	if err == nil {
		return found
	}
	var incompatible *api.CompatibilityError
	require.ErrorAs(t, err, &incompatible)
	for _, nameCRC := range incompatible.IncompatibleMessages {
		name := nameCRC[:strings.LastIndex(nameCRC, "_")]
		found[name] = "absent"
		if known[name] {
			found[name] = "crc differs"
		}
	}
	return found
}

func TestEveryBinapiMessageOfTheForwarderIsKnownToRealVPP(t *testing.T) {
	vpp := realvpp.StartForTest(t, realvpp.Options{})
	conn, err := govpp.Connect(vpp.APISocket())
	require.NoError(t, err)
	t.Cleanup(conn.Disconnect)
	known := vppMessageNames(t, conn)
	registered := registeredMessages()

	var forwarderMessages []api.Message
	for _, pkg := range linkedPackages(t) {
		forwarderMessages = append(forwarderMessages, registered[pkg]...)
		delete(registered, pkg)
	}
	var sdkOnlyMessages []api.Message
	for _, pkg := range notLinkedByForwarder {
		require.NotEmpty(t, registered[pkg], "%s registers no message", pkg)
		sdkOnlyMessages = append(sdkOnlyMessages, registered[pkg]...)
		delete(registered, pkg)
	}
	require.Empty(t, packageNames(registered), "this test links binapi packages the forwarder does not: its count would be wrong")

	forwarderDiffs := differences(t, conn, known, forwarderMessages)
	sdkDiffs := differences(t, conn, known, sdkOnlyMessages)
	t.Logf("%d binapi messages of the forwarder checked, %d differ: %v; %d of sdk-vpp only, %d differ: %v",
		len(forwarderMessages), len(forwarderDiffs), sortedKeys(forwarderDiffs), len(sdkOnlyMessages), len(sdkDiffs), sortedKeys(sdkDiffs))
	require.Equal(t, expectedDifferences, forwarderDiffs, "messages of the forwarder's binapi that VPP does not know (docs/vpp.md)")
	require.Equal(t, expectedSdkOnlyDifferences, withoutPrefix(sdkDiffs, "cnat_"), "messages of sdk-vpp's other binapi that VPP does not know (docs/vpp.md)")
	for name, how := range sdkDiffs {
		if strings.HasPrefix(name, "cnat_") {
			require.Equal(t, "absent", how, "%s: the cnat plugin is not built, so cnat messages can only be absent", name)
		}
	}
}

func withoutPrefix(diffs map[string]string, prefix string) map[string]string {
	kept := map[string]string{}
	for name, how := range diffs {
		if !strings.HasPrefix(name, prefix) {
			kept[name] = how
		}
	}
	return kept
}

func packageNames(byPackage map[string][]api.Message) []string {
	var names []string
	for name := range byPackage {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func sortedKeys(m map[string]string) []string {
	var keys []string
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}
