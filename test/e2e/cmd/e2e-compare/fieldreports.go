package main

import "strings"

// scenario is one row of a comparison: the name it is shown under, and the test, or its subtest
// vppsim or vpp (the simulator or real VPP) for the tests that run on both, whose results fill it.
type scenario struct{ name, test string }

// topLevel is the test the scenario runs in.
func (s scenario) topLevel() string { return strings.SplitN(s.test, "/", 2)[0] }

// fieldReports are the field reports' scenarios (docs/e2e.md), in their order: 3 (restart over tap
// and veth, with several policies), 1 (client OOM kill, with and without its nsmgr), 2 and 4.
// A test that runs on the simulator and on real VPP gives two rows; every subtest of a chosen
// test runs, so both of its rows are listed.
var fieldReports = []scenario{
	{"forwarder restart, tap", "TestForwarderRestartOverTap"},
	{"forwarder restart, veth", "TestForwarderRestartOverVeth/vppsim"},
	{"forwarder restart, veth, real VPP", "TestForwarderRestartOverVeth/vpp"},
	{"client SIGKILL, connection expires", "TestKilledClientConnectionExpires/vppsim"},
	{"client SIGKILL, connection expires, real VPP", "TestKilledClientConnectionExpires/vpp"},
	{"client and nsmgr SIGKILL, connection expires", "TestKilledClientAndNsmgrConnectionExpires/vppsim"},
	{"client and nsmgr SIGKILL, connection expires, real VPP", "TestKilledClientAndNsmgrConnectionExpires/vpp"},
	{"endpoint restart, two clients", "TestHealAfterEndpointRestartWithTwoClients"},
	{"idle monitor streams cut, two nodes", "TestIdleCutMonitorStreamsAcrossNodes"},
	// Not field reports: a heal through a restarted nsmgr (the forwarder only passes it on,
	// but its Close must still leave nothing), and a sample of first Requests large enough
	// for a spread.
	{"nsmgr restart", "TestHealAfterNsmgrRestart"},
	{"8 clients one after another", "TestSequentialClientsFirstRequest"},
	// Mechanisms beyond kernel and vxlan (issue 23): traffic, then a Close that leaves nothing.
	{"remote vlan to a host on the trunk", "TestRemoteVlanToHostOnTrunk/vppsim"},
	{"remote vlan to a host on the trunk, real VPP", "TestRemoteVlanToHostOnTrunk/vpp"},
	{"remote vlan between clients on two nodes", "TestRemoteVlanBetweenNodes/vppsim"},
	{"remote vlan between clients on two nodes, real VPP", "TestRemoteVlanBetweenNodes/vpp"},
	// Real VPP only: the simulator's memif never connects, so its subtest skips and reports
	// nothing.
	{"memif from a client's own VPP to kernel, one node, real VPP", "TestLocalMemifFromClientVPPToKernel/vpp"},
	{"memif from a client's own VPP to kernel, two nodes, real VPP", "TestRemoteMemifFromClientVPPToKernel/vpp"},
	// Address families, MTU and the encrypted mechanisms (issue 23), across two nodes: a
	// forwarder restart under IPv6-only and dual-stack policy routes, the MTU stock derives for
	// a vxlan path, and wireguard and IPsec (real VPP only: the simulator carries no encrypted
	// traffic, so their vppsim subtests skip and report nothing).
	{"IPv6 only over vxlan, forwarder restart", "TestIPv6OverVxlan/vppsim"},
	{"IPv6 only over vxlan, forwarder restart, real VPP", "TestIPv6OverVxlan/vpp"},
	{"dual-stack over vxlan, forwarder restart", "TestDualStackOverVxlan/vppsim"},
	{"dual-stack over vxlan, forwarder restart, real VPP", "TestDualStackOverVxlan/vpp"},
	{"MTU over vxlan, overhead subtracted", "TestMTUOverVxlan/vppsim"},
	{"MTU over vxlan, overhead subtracted, real VPP", "TestMTUOverVxlan/vpp"},
	{"wireguard between nodes, encrypted on the wire, real VPP", "TestWireguardBetweenNodes/vpp"},
	{"IPsec (IKEv2) between nodes, encrypted on the wire, real VPP", "TestIPsecIKEv2BetweenNodes/vpp"},
	// The encrypted tunnels and memif across forwarder restarts (issue 23), one node at a time,
	// real VPP only (the simulator carries no encrypted or memif traffic).
	{"wireguard between nodes, forwarder restart, real VPP", "TestWireguardSurvivesForwarderRestart/vpp"},
	{"IPsec (IKEv2) between nodes, forwarder restart, real VPP", "TestIPsecSurvivesForwarderRestart/vpp"},
	{"memif from a client's own VPP to kernel, forwarder restart, real VPP", "TestLocalMemifSurvivesForwarderRestart/vpp"},
	// Not a field report: a forwarder restart under a vl3 network whose endpoint loops back to
	// itself through that forwarder (upstream's vl3 endpoints do), real VPP only.
	{"vl3 endpoint's loop to itself, forwarder restart, real VPP", "TestVl3ForwarderRestart/vpp"},
}

// fieldReportsIntro says what the table is, above it in docs/compare.md.
const fieldReportsIntro = `Each field report's scenario (/work/shared/forwarder-notes.md, docs/e2e.md) in the end-to-end
harness, on the stock-equivalent forwarder (test/stockforwarder: the stock cmd-forwarder-vpp
v1.18.0 chain composed again) and on forwarder-vpp; the "real VPP" rows ran on upstream VPP,
the others on test/vppsim. Each client has three policy routes. The README's "Known gaps" and
docs/e2e.md say how to read the figures.

`
