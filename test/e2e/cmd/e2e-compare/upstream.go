package main

import "slices"

// upstreamExamples are the examples of NSM's deployments-k8s v1.18.0 that exercise a forwarder
// (heal, features, multiforwarder, use-cases), each named after its folder and filled by the
// scenario docs/upstream-examples.md names for it, in that page's order. Examples whose scenario
// carries no traffic on the simulator (memif, IP payload over wireguard or IPsec, VPP endpoints)
// have a real-VPP row only.
var upstreamExamples = slices.Concat(
	onBoth("heal/dataplane-interrupt", "TestUpstreamHealDataplaneInterrupt"),
	onBoth("heal/local-forwarder-death", "TestUpstreamHealLocalForwarderDeath"),
	onBoth("heal/local-forwarder-remote-forwarder", "TestUpstreamHealExamples/local-forwarder-remote-forwarder"),
	onBoth("heal/local-nse-death", "TestUpstreamHealLocalNseDeath"),
	onBoth("heal/local-nsm-system-restart", "TestUpstreamHealExamples/local-nsm-system-restart"),
	onRealVPP("heal/local-nsmgr-local-forwarder-memif", "TestUpstreamMemifHealExamples/local-nsmgr-local-forwarder-memif"),
	onRealVPP("heal/local-nsmgr-local-forwarder-memif (kernel endpoint)", "TestUpstreamHealLocalNsmgrLocalForwarderMemifToKernel"),
	onRealVPP("heal/local-nsmgr-local-nse-memif", "TestUpstreamMemifHealExamples/local-nsmgr-local-nse-memif"),
	onBoth("heal/local-nsmgr-remote-nsmgr", "TestUpstreamHealExamples/local-nsmgr-remote-nsmgr"),
	onBoth("heal/local-nsmgr-restart", "TestUpstreamHealLocalNsmgrRestart"),
	onBoth("heal/registry-local-endpoint", "TestUpstreamHealExamples/registry-local-endpoint"),
	onBoth("heal/registry-remote-forwarder", "TestUpstreamHealExamples/registry-remote-forwarder"),
	onBoth("heal/registry-remote-nsmgr", "TestUpstreamHealExamples/registry-remote-nsmgr"),
	onBoth("heal/registry-restart", "TestUpstreamHealRegistryRestart"),
	onRealVPP("heal/remote-forwarder-death-ip", "TestUpstreamHealExamples/remote-forwarder-death-ip"),
	onBoth("heal/remote-forwarder-death", "TestUpstreamHealRemoteForwarderDeath"),
	onRealVPP("heal/remote-nse-death-ip", "TestUpstreamHealExamples/remote-nse-death-ip"),
	onBoth("heal/remote-nse-death", "TestUpstreamHealExamples/remote-nse-death"),
	onRealVPP("heal/remote-nsm-system-restart-memif-ip", "TestUpstreamMemifHealExamples/remote-nsm-system-restart-memif-ip"),
	onBoth("heal/remote-nsmgr-death", "TestUpstreamHealExamples/remote-nsmgr-death"),
	onBoth("heal/remote-nsmgr-remote-endpoint", "TestUpstreamHealExamples/remote-nsmgr-remote-endpoint"),
	onRealVPP("heal/remote-nsmgr-restart-ip", "TestUpstreamHealExamples/remote-nsmgr-restart-ip"),
	onBoth("heal/remote-nsmgr-restart", "TestUpstreamHealExamples/remote-nsmgr-restart"),
	onBoth("heal/spire-agent-restart", "TestUpstreamHealExamples/spire-agent-restart"),
	onBoth("heal/spire-server-agent-restart", "TestUpstreamHealExamples/spire-server-agent-restart"),
	onBoth("heal/spire-server-restart", "TestUpstreamHealExamples/spire-server-restart"),
	onBoth("heal/spire-upgrade", "TestUpstreamHealExamples/spire-upgrade"),
	onRealVPP("heal/vl3-dataplane-interrupt", "TestUpstreamVl3/vl3-dataplane-interrupt"),
	onBoth("heal/vl3-nscs-death", "TestUpstreamVl3/vl3-nscs-death"),
	onBoth("heal/vl3-nse-death", "TestUpstreamVl3/vl3-nse-death"),

	onBoth("features/change-nse-dynamically", "TestUpstreamFeaturesChangeNseDynamically"),
	onRealVPP("features/dual-stack/Kernel2IP2Kernel_dual_stack", "TestUpstreamFeaturesKernel2IP2KernelFamilies/dual_stack"),
	onBoth("features/dual-stack/Kernel2Kernel_dual_stack", "TestDualStackOverVeth"),
	onBoth("features/dual-stack/vl3-dual-stack", "TestUpstreamVl3/vl3-dual-stack"),
	onBoth("features/exclude-prefixes-client", "TestUpstreamFeaturesExcludePrefixesClient"),
	onBoth("features/exclude-prefixes", "TestUpstreamFeaturesExcludePrefixes"),
	onBoth("features/ipam-policies", "TestUpstreamFeaturesIpamPolicies"),
	onRealVPP("features/ipv6/Kernel2IP2Kernel_ipv6", "TestUpstreamFeaturesKernel2IP2KernelFamilies/ipv6"),
	onRealVPP("features/ipv6/Kernel2IP2Memif_ipv6", "TestUpstreamMemifExamples/Kernel2IP2Memif_ipv6"),
	onBoth("features/ipv6/Kernel2Kernel_ipv6", "TestIPv6OverVeth"),
	onRealVPP("features/ipv6/Memif2IP2Kernel_ipv6", "TestUpstreamMemifExamples/Memif2IP2Kernel_ipv6"),
	onRealVPP("features/ipv6/Memif2IP2Memif_ipv6", "TestUpstreamMemifExamples/Memif2IP2Memif_ipv6"),
	onRealVPP("features/ipv6/Memif2Memif_ipv6", "TestUpstreamMemifExamples/Memif2Memif_ipv6"),
	onBoth("features/multiple-services", "TestUpstreamFeaturesMultipleServices"),
	onBoth("features/mutually-aware-nses", "TestUpstreamFeaturesMutuallyAwareNSEs"),
	onRealVPP("features/nse-composition", "TestUpstreamFeaturesNseCompositionVPP"),
	onBoth("features/nse-composition (kernel hops)", "TestUpstreamFeaturesNseComposition"),
	onBoth("features/policy-based-routing", "TestUpstreamFeaturesPolicyBasedRouting"),
	onBoth("features/select-forwarder", "TestUpstreamFeaturesSelectForwarder"),
	onBoth("features/vl3-dns", "TestUpstreamVl3/vl3-dns"),
	onBoth("features/vl3-ipv6", "TestUpstreamVl3/vl3-ipv6"),
	onBoth("features/vl3-lb", "TestUpstreamFeaturesVl3Lb"),

	onBoth("multiforwarder + use-cases/Kernel2Kernel", "TestUpstreamMultiforwarderKernel2Kernel"),
	onBoth("multiforwarder + use-cases/Kernel2Ethernet2Kernel", "TestUpstreamMultiforwarderKernel2Ethernet2Kernel"),
	onRealVPP("multiforwarder + use-cases/Memif2Memif", "TestUpstreamMemifExamples/multiforwarder-Memif2Memif"),

	onBoth("use-cases/Kernel2Ethernet2Kernel", "TestRemoteKernelVxlanKernel"),
	onRealVPP("use-cases/Kernel2Ethernet2Memif", "TestUpstreamMemifExamples/Kernel2Ethernet2Memif"),
	onRealVPP("use-cases/Kernel2IP2Kernel (wireguard)", "TestWireguardBetweenNodes"),
	onRealVPP("use-cases/Kernel2IP2Kernel (IPsec)", "TestIPsecIKEv2BetweenNodes"),
	onRealVPP("use-cases/Kernel2IP2Memif", "TestUpstreamMemifExamples/Kernel2IP2Memif"),
	onBoth("use-cases/Kernel2Kernel", "TestLocalKernelToKernelOverVeth"),
	onRealVPP("use-cases/Kernel2Memif", "TestUpstreamMemifExamples/Kernel2Memif"),
	onBoth("use-cases/Kernel2RVlanBreakout", "TestUpstreamUseCasesKernel2RVlanBreakout"),
	onBoth("use-cases/Kernel2RVlanInternal", "TestUpstreamUseCasesKernel2RVlanInternal"),
	onBoth("use-cases/Kernel2RVlanMultiNS", "TestUpstreamUseCasesKernel2RVlanMultiNS"),
	onRealVPP("use-cases/Memif2Ethernet2Kernel", "TestRemoteMemifFromClientVPPToKernel"),
	onRealVPP("use-cases/Memif2Ethernet2Memif", "TestUpstreamMemifExamples/Memif2Ethernet2Memif"),
	onRealVPP("use-cases/Memif2IP2Kernel", "TestUpstreamMemifExamples/Memif2IP2Kernel"),
	onRealVPP("use-cases/Memif2IP2Memif", "TestUpstreamMemifExamples/Memif2IP2Memif"),
	onRealVPP("use-cases/Memif2Kernel", "TestLocalMemifFromClientVPPToKernel"),
	onRealVPP("use-cases/Memif2Memif", "TestUpstreamMemifExamples/Memif2Memif"),
	onBoth("use-cases/vl3-basic", "TestUpstreamVl3/vl3-basic"),
)

// upstreamExamplesIntro says what the table is, above it in docs/upstream-results.md.
const upstreamExamplesIntro = `Every example of NSM's deployments-k8s v1.18.0 that exercises a forwarder, in the end-to-end
harness, on the stock-equivalent forwarder (test/stockforwarder) and on forwarder-vpp, each row
named after the example's folder. docs/upstream-examples.md says what each example checks, which
scenario reproduces it and how it differs from upstream; the "real VPP" rows ran on upstream
VPP, the others on test/vppsim. Examples that carry nothing on the simulator (memif, IP payload)
have a real-VPP row only. The time column is the scenario's recovery (heal) time where it has one.

`

// onBoth is the example's scenario test run on the simulator and on real VPP.
func onBoth(example, test string) []scenario {
	return []scenario{{example, test + "/vppsim"}, {example + ", real VPP", test + "/vpp"}}
}

// onRealVPP is the example's scenario test run on real VPP only.
func onRealVPP(example, test string) []scenario {
	return []scenario{{example + ", real VPP", test + "/vpp"}}
}
