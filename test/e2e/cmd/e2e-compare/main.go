// Command e2e-compare runs the end-to-end scenarios of the field reports against the
// stock-equivalent forwarder (test/stockforwarder) and against forwarder-vpp, several times
// each, alternating, and prints one table: each scenario's outcome on both, heal or clean-up
// time, leaked objects and first Request latency, with medians and spreads. It exits non-zero
// when forwarder-vpp fails a run of a scenario or is slower than stock beyond the spread of the
// runs (`make compare`; see docs/e2e.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nsmfwd/forwarder-vpp/test/e2e/compare"
	"github.com/nsmfwd/forwarder-vpp/test/figures"
)

// scenario is one field report's scenario: the name its test reports results under, and the
// test, or its subtest vppsim or vpp (the simulator or real VPP) for the tests that run on both.
type scenario struct{ name, test string }

// topLevel is the test the scenario runs in.
func (s scenario) topLevel() string { return strings.SplitN(s.test, "/", 2)[0] }

// scenarios are the field reports' scenarios (docs/e2e.md), in their order: 3 (restart over tap
// and veth, with several policies), 1 (client OOM kill, with and without its nsmgr), 2 and 4.
// A test that runs on the simulator and on real VPP gives two rows; every subtest of a chosen
// test runs, so both of its rows are listed.
var scenarios = []scenario{
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
	// deployments-k8s v1.18.0 examples/heal (issue 24, docs/upstream-examples.md): the rows of
	// TestUpstreamHealExamples that make test runs; the others skip here (make upstream-slow).
	{"heal/local-nsm-system-restart", "TestUpstreamHealExamples/local-nsm-system-restart/vppsim"},
	{"heal/local-nsm-system-restart, real VPP", "TestUpstreamHealExamples/local-nsm-system-restart/vpp"},
	{"heal/spire-server-agent-restart", "TestUpstreamHealExamples/spire-server-agent-restart/vppsim"},
	{"heal/spire-server-agent-restart, real VPP", "TestUpstreamHealExamples/spire-server-agent-restart/vpp"},
	// deployments-k8s v1.18.0 examples/features and multiforwarder (issue 24,
	// docs/upstream-examples.md): two forwarders on a node, two services in one client.
	{"upstream features/select-forwarder", "TestUpstreamFeaturesSelectForwarder/vppsim"},
	{"upstream features/select-forwarder, real VPP", "TestUpstreamFeaturesSelectForwarder/vpp"},
	{"upstream multiforwarder + Kernel2Kernel", "TestUpstreamMultiforwarderKernel2Kernel/vppsim"},
	{"upstream multiforwarder + Kernel2Kernel, real VPP", "TestUpstreamMultiforwarderKernel2Kernel/vpp"},
	{"upstream features/multiple-services", "TestUpstreamFeaturesMultipleServices/vppsim"},
	{"upstream features/multiple-services, real VPP", "TestUpstreamFeaturesMultipleServices/vpp"},
	{"upstream features/exclude-prefixes-client", "TestUpstreamFeaturesExcludePrefixesClient/vppsim"},
	{"upstream features/exclude-prefixes-client, real VPP", "TestUpstreamFeaturesExcludePrefixesClient/vpp"},
	{"upstream features/mutually-aware-nses", "TestUpstreamFeaturesMutuallyAwareNSEs/vppsim"},
	{"upstream features/mutually-aware-nses, real VPP", "TestUpstreamFeaturesMutuallyAwareNSEs/vpp"},
	{"upstream features/change-nse-dynamically", "TestUpstreamFeaturesChangeNseDynamically/vppsim"},
	{"upstream features/change-nse-dynamically, real VPP", "TestUpstreamFeaturesChangeNseDynamically/vpp"},
	{"upstream features/nse-composition (kernel hops)", "TestUpstreamFeaturesNseComposition/vppsim"},
	{"upstream features/nse-composition (kernel hops), real VPP", "TestUpstreamFeaturesNseComposition/vpp"},
	// Real VPP only: the simulator carries nothing over wireguard.
	{"upstream features/ipv6/Kernel2IP2Kernel, real VPP", "TestUpstreamFeaturesKernel2IP2KernelFamilies/ipv6/vpp"},
	{"upstream features/dual_stack/Kernel2IP2Kernel, real VPP", "TestUpstreamFeaturesKernel2IP2KernelFamilies/dual_stack/vpp"},
	// h-mech (issue 23): the encrypted tunnels and memif across forwarder restarts, one node at
	// a time, real VPP only (the simulator carries no encrypted or memif traffic).
	{"wireguard between nodes, forwarder restart, real VPP", "TestWireguardSurvivesForwarderRestart/vpp"},
	{"IPsec (IKEv2) between nodes, forwarder restart, real VPP", "TestIPsecSurvivesForwarderRestart/vpp"},
	{"memif from a client's own VPP to kernel, forwarder restart, real VPP", "TestLocalMemifSurvivesForwarderRestart/vpp"},
	// deployments-k8s v1.18.0's memif examples (issue 24, upstream_memif_test.go and
	// upstream_memif_heal_test.go): clients and endpoints with a VPP of their own. Real VPP
	// only: the simulator's memif never connects, so their vppsim subtests skip.
	{"upstream use-cases/Kernel2Memif, real VPP", "TestUpstreamMemifExamples/Kernel2Memif/vpp"},
	{"upstream use-cases/Memif2Memif, real VPP", "TestUpstreamMemifExamples/Memif2Memif/vpp"},
	{"upstream use-cases/Kernel2Ethernet2Memif, real VPP", "TestUpstreamMemifExamples/Kernel2Ethernet2Memif/vpp"},
	{"upstream use-cases/Memif2Ethernet2Memif, real VPP", "TestUpstreamMemifExamples/Memif2Ethernet2Memif/vpp"},
	{"upstream use-cases/Kernel2IP2Memif, real VPP", "TestUpstreamMemifExamples/Kernel2IP2Memif/vpp"},
	{"upstream use-cases/Memif2IP2Kernel, real VPP", "TestUpstreamMemifExamples/Memif2IP2Kernel/vpp"},
	{"upstream use-cases/Memif2IP2Memif, real VPP", "TestUpstreamMemifExamples/Memif2IP2Memif/vpp"},
	{"upstream multiforwarder + Memif2Memif, real VPP", "TestUpstreamMemifExamples/multiforwarder-Memif2Memif/vpp"},
	{"upstream features/ipv6/Memif2Memif_ipv6, real VPP", "TestUpstreamMemifExamples/Memif2Memif_ipv6/vpp"},
	{"upstream features/ipv6/Kernel2IP2Memif_ipv6, real VPP", "TestUpstreamMemifExamples/Kernel2IP2Memif_ipv6/vpp"},
	{"upstream features/ipv6/Memif2IP2Kernel_ipv6, real VPP", "TestUpstreamMemifExamples/Memif2IP2Kernel_ipv6/vpp"},
	{"upstream features/ipv6/Memif2IP2Memif_ipv6, real VPP", "TestUpstreamMemifExamples/Memif2IP2Memif_ipv6/vpp"},
	{"upstream heal/local-nsmgr-local-forwarder-memif, real VPP", "TestUpstreamMemifHealExamples/local-nsmgr-local-forwarder-memif/vpp"},
	{"upstream heal/local-nsmgr-local-nse-memif, real VPP", "TestUpstreamMemifHealExamples/local-nsmgr-local-nse-memif/vpp"},
	{"upstream heal/remote-nsm-system-restart-memif-ip, real VPP", "TestUpstreamMemifHealExamples/remote-nsm-system-restart-memif-ip/vpp"},
	// deployments-k8s v1.18.0 vl3 (issue 24, h-up): vl3-basic, two vl3 endpoints with kernel data
	// planes peering through the forwarders, two clients on two nodes; the vl3 heal rows of
	// TestUpstreamVl3 skip here (make upstream-slow).
	{"upstream use-cases/vl3-basic (kernel vl3 endpoints)", "TestUpstreamVl3/vl3-basic/vppsim"},
	{"upstream use-cases/vl3-basic (vl3 endpoints with their own VPP), real VPP", "TestUpstreamVl3/vl3-basic/vpp"},
	// deployments-k8s v1.18.0 (issue 24, h-feat): the nsmgrs' excluded prefixes, two clients
	// healing onto an endpoint with the strict IPAM policy, and three remote vlan endpoints
	// (untagged, VLAN 300 for two services, VLAN 100) through one trunk with two clients each.
	{"upstream features/exclude-prefixes", "TestUpstreamFeaturesExcludePrefixes/vppsim"},
	{"upstream features/exclude-prefixes, real VPP", "TestUpstreamFeaturesExcludePrefixes/vpp"},
	{"upstream features/ipam-policies", "TestUpstreamFeaturesIpamPolicies/vppsim"},
	{"upstream features/ipam-policies, real VPP", "TestUpstreamFeaturesIpamPolicies/vpp"},
	{"upstream use-cases/Kernel2RVlanMultiNS", "TestUpstreamUseCasesKernel2RVlanMultiNS/vppsim"},
	{"upstream use-cases/Kernel2RVlanMultiNS, real VPP", "TestUpstreamUseCasesKernel2RVlanMultiNS/vpp"},
	// deployments-k8s v1.18.0 vl3 features (issue 24, h-up): the same vl3 network over IPv6 and
	// dual stack, and with the endpoints' DNS (four clients by name).
	{"upstream features/vl3-ipv6 (kernel vl3 endpoints)", "TestUpstreamVl3/vl3-ipv6/vppsim"},
	{"upstream features/vl3-ipv6 (vl3 endpoints with their own VPP), real VPP", "TestUpstreamVl3/vl3-ipv6/vpp"},
	{"upstream features/dual-stack/vl3-dual-stack (kernel vl3 endpoints)", "TestUpstreamVl3/vl3-dual-stack/vppsim"},
	{"upstream features/dual-stack/vl3-dual-stack (vl3 endpoints with their own VPP), real VPP", "TestUpstreamVl3/vl3-dual-stack/vpp"},
	{"upstream features/vl3-dns (kernel vl3 endpoints)", "TestUpstreamVl3/vl3-dns/vppsim"},
	{"upstream features/vl3-dns (vl3 endpoints with their own VPP), real VPP", "TestUpstreamVl3/vl3-dns/vpp"},
	// deployments-k8s v1.18.0 multiforwarder across two nodes (issue 24, h-feat, second round):
	// two forwarders per node, each added one with its own VPP, uplink and tunnel IP.
	{"upstream multiforwarder + Kernel2Ethernet2Kernel", "TestUpstreamMultiforwarderKernel2Ethernet2Kernel/vppsim"},
	{"upstream multiforwarder + Kernel2Ethernet2Kernel, real VPP", "TestUpstreamMultiforwarderKernel2Ethernet2Kernel/vpp"},
	// deployments-k8s v1.18.0 nse-composition with VPP endpoints (issue 24, h-feat, third
	// round): a firewall with a VPP ACL and three pass-through endpoints, each with its own VPP,
	// every hop chosen by the service's matches; real VPP only (memif).
	{"upstream features/nse-composition (VPP endpoints, ACL), real VPP", "TestUpstreamFeaturesNseCompositionVPP/vpp"},
	// Kernel2RVlanInternal: two clients on two nodes through one VLAN, IPv4 and IPv6, iperf3.
	{"upstream use-cases/Kernel2RVlanInternal", "TestUpstreamUseCasesKernel2RVlanInternal/vppsim"},
	{"upstream use-cases/Kernel2RVlanInternal, real VPP", "TestUpstreamUseCasesKernel2RVlanInternal/vpp"},
	// deployments-k8s v1.18.0 vl3 with the endpoints' own VPPs (issue 24, h-up, third round):
	// every memif of each endpoint's VPP set down in turn. Real VPP only: the simulator runs no
	// VPP in pods, so its vppsim subtest skips.
	{"upstream heal/vl3-dataplane-interrupt, real VPP", "TestUpstreamVl3/vl3-dataplane-interrupt/vpp"},
}

const (
	reference = "stock"
	subject   = "forwarder-vpp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-compare:", err)
		os.Exit(1)
	}
}

func run() error {
	runs := flag.Int("runs", 3, "runs of every scenario on each forwarder")
	root := flag.String("root", ".", "repository root")
	lock := flag.String("lock", "", "file to flock around each run of the suite, to take turns with other heavy jobs")
	keep := flag.String("results", "", "also keep every run's results (JSON lines) in this file")
	only := flag.String("only", "", "run only the scenarios whose test name matches this regexp")
	doc := flag.String("doc", "docs/compare.md", "document to write the table into, under the root (empty: none)")
	command := flag.String("command", "make compare", "what a person runs to measure again, for the document's header")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: e2e-compare [flags] (as root, from the repository root)\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *runs < 1 {
		return errors.New("-runs must be at least 1")
	}
	rootDir, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "e2e-compare-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	testBinary := filepath.Join(work, "e2e.test")
	build := exec.Command("go", "test", "-c", "-o", testBinary, "./test/e2e/")
	build.Dir, build.Stdout, build.Stderr = rootDir, os.Stderr, os.Stderr
	if err = build.Run(); err != nil {
		return fmt.Errorf("building the e2e suite: %w", err)
	}
	resultsPath := *keep
	if resultsPath == "" {
		resultsPath = filepath.Join(work, "results.jsonl")
	}
	if err = os.Remove(resultsPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}

	chosen, absent, err := selected(filepath.Join(rootDir, "test", "e2e"), *only)
	if err != nil {
		return err
	}
	if len(chosen) == 0 {
		return errors.New("no scenario to run")
	}
	started := time.Now()
	skipped := map[string]string{}
	for i := 1; i <= *runs; i++ {
		for _, fwd := range []string{reference, subject} {
			logPath := filepath.Join(work, fmt.Sprintf("run%d-%s.log", i, fwd))
			took, runErr := runSuite(rootDir, testBinary, chosen, fwd, resultsPath, logPath, *lock, skipped)
			fmt.Fprintf(os.Stderr, "e2e-compare: run %d/%d on %s took %s (%s)\n", i, *runs, fwd, took.Round(time.Second), outcome(runErr))
		}
	}
	results, err := compare.Read(resultsPath)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(chosen))
	for _, s := range chosen {
		if _, ok := skipped[s.name]; !ok {
			names = append(names, s.name)
		}
	}
	summary := compare.Summarize(results, reference, subject, *runs, names)
	var out strings.Builder
	fmt.Fprintf(&out, "`make compare`: %d runs of each scenario on each forwarder, %s in all.\n\n", *runs, time.Since(started).Round(time.Second))
	out.WriteString(summary.Markdown())
	for _, s := range absent {
		fmt.Fprintf(&out, "\nNot run: %s (no %s in this tree).\n", s.name, s.topLevel())
	}
	for _, s := range chosen {
		if reason, ok := skipped[s.name]; ok {
			fmt.Fprintf(&out, "\nNot run: %s (%s skipped: %s).\n", s.name, s.test, reason)
		}
	}
	if left := summary.Leftovers(); left != "" {
		fmt.Fprintf(&out, "\nLeft behind once every client had closed:\n%s", left)
	}
	failures := summary.Failures()
	if len(failures) > 0 {
		fmt.Fprintf(&out, "\n%s does worse than %s:\n  %s\n", subject, reference, strings.Join(failures, "\n  "))
	} else {
		fmt.Fprintf(&out, "\n%s passes every scenario and is nowhere slower than %s beyond the spread of the runs.\n", subject, reference)
	}
	fmt.Print(out.String())
	if *doc != "" {
		run := figures.Run{Command: *command, Started: started, Duration: time.Since(started)}
		if len(failures) > 0 {
			run.ExitStatus = 1
		}
		path := filepath.Join(rootDir, *doc)
		if err = figures.Write(rootDir, path, "forwarder-vpp and the stock forwarder, field report by field report", run, docIntro+out.String()); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "e2e-compare: wrote %s\n", path)
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d shortfalls of %s", len(failures), subject)
	}
	return nil
}

// docIntro says what the table is, above it in docs/compare.md.
const docIntro = `Each field report's scenario (/work/shared/forwarder-notes.md, docs/e2e.md) in the end-to-end
harness, on the stock-equivalent forwarder (test/stockforwarder: the stock cmd-forwarder-vpp
v1.18.0 chain composed again) and on forwarder-vpp; the "real VPP" rows ran on upstream VPP,
the others on test/vppsim. Each client has three policy routes. The README's "Known gaps" and
docs/e2e.md say how to read the figures.

`

// selected returns the scenarios to run: those whose test exists in dir's test files (and
// matches only), and those whose test does not exist.
func selected(dir, only string) (chosen, absent []scenario, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, nil, err
	}
	onlyPattern, err := regexp.Compile(only)
	if err != nil {
		return nil, nil, fmt.Errorf("-only: %w", err)
	}
	var sources strings.Builder
	for _, f := range files {
		data, readErr := os.ReadFile(f)
		if readErr != nil {
			return nil, nil, readErr
		}
		sources.Write(data)
	}
	for _, s := range scenarios {
		switch {
		case !onlyPattern.MatchString(s.test):
		case strings.Contains(sources.String(), "func "+s.topLevel()+"(t *testing.T)"):
			chosen = append(chosen, s)
		default:
			absent = append(absent, s)
		}
	}
	return chosen, absent, nil
}

// runSuite runs the chosen scenarios once on fwd. A failing scenario fails the suite, which
// is expected of stock: the results file says what happened. A test that recorded no result
// (it failed before it could, or it does not record) gets one from the suite's own verdict; one
// that skipped (no real VPP on the machine) gets none, and its reason goes into skipped.
func runSuite(root, testBinary string, chosen []scenario, fwd, resultsPath, logPath, lock string, skipped map[string]string) (time.Duration, error) {
	var tests []string
	for _, s := range chosen {
		if !slices.Contains(tests, s.topLevel()) {
			tests = append(tests, s.topLevel())
		}
	}
	argv := []string{testBinary, "-test.run", "^(" + strings.Join(tests, "|") + ")$", "-test.count=1", "-test.timeout=60m", "-test.v"}
	if lock != "" {
		argv = append([]string{"flock", lock}, argv...)
	}
	before, err := countResults(resultsPath, fwd)
	if err != nil {
		return 0, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = filepath.Join(root, "test", "e2e")
	cmd.Env = append(os.Environ(), "E2E_FORWARDER="+fwd, compare.ResultsVariable+"="+resultsPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	runErr := cmd.Run()
	took := time.Since(start)
	after, err := countResults(resultsPath, fwd)
	if err != nil {
		return took, err
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		return took, err
	}
	for _, s := range chosen {
		if after[s.name] > before[s.name] {
			continue
		}
		if reason, ok := compare.SkipReason(string(log), s.test); ok {
			skipped[s.name] = reason
			continue
		}
		passed := strings.Contains(string(log), "--- PASS: "+s.test+" ")
		r := compare.Result{Scenario: s.name, Forwarder: fwd, Passed: passed, Heals: -1}
		if !passed {
			r.FailedAt = "the test (it recorded no step)"
		}
		if err = compare.Append(resultsPath, r); err != nil {
			return took, err
		}
	}
	return took, runErr
}

// countResults counts fwd's results per scenario in path.
func countResults(path, fwd string) (map[string]int, error) {
	results, err := compare.Read(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, r := range results {
		if r.Forwarder == fwd {
			counts[r.Scenario]++
		}
	}
	return counts, nil
}

func outcome(err error) string {
	if err == nil {
		return "all passed"
	}
	return "some failed: " + err.Error()
}
