# forwarder-vpp: build, test, release and demo targets.
# `make demo` and `make test` are the two commands a fresh machine needs (see README).

GO        ?= go
BIN       := $(CURDIR)/bin
GOTESTFLAGS ?= -count=1 -timeout 40m
FUZZTIME  ?= 1m
# Every test that asks for a real VPP (test/realvpp) appends its outcome here; `make test` then
# says how many ran on it.
REALVPP_LOG := $(CURDIR)/.cache/realvpp-tests.log
# `make test` keeps its whole output here and repeats what failed at the end.
TEST_LOG := $(CURDIR)/.cache/test-output.log

# Release: the version comes from VERSION, which the manifests deploy too (test/kind checks both).
VERSION   ?= $(shell cat $(CURDIR)/VERSION)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
CREATED   ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
IMAGE     ?= ghcr.io/nsmfwd/forwarder-vpp
LDFLAGS   := -X main.version=$(VERSION)

# The kind end-to-end suite: image build, cluster, SPIRE, both install paths and every scenario.
KIND_E2E_TIMEOUT ?= 120m

.PHONY: all build xdp image tools test kind-e2e k8s-e2e vet fmt-check bench bench-forwarder fuzz demo compare upstream-compare crash-campaign upstream-slow clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./...

# The uplink's XDP program (NSM_VPP_INIT=AF_XDP), as the image's build stage compiles it.
xdp:
	mkdir -p $(BIN)
	scripts/build-xdp.sh $(BIN)/afxdp.o

# The runtime image, tagged with VERSION and stamped (forwarder-vpp -version, OCI labels).
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		--build-arg CREATED=$(CREATED) -t $(IMAGE):$(VERSION) .

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# SPIRE (built from the pinned tools module into .cache/bin), iproute2/ping for the end-to-end
# tests, clang for the XDP program and the real VPP of ../shared/vpp when it exists (into
# .cache/vpp); a no-op once they are there.
tools:
	scripts/install-tools.sh

# Everything but the kind suite, which skips here and runs with make kind-e2e.
test: fmt-check vet tools
	@mkdir -p $(dir $(REALVPP_LOG)) && rm -f $(REALVPP_LOG)
	@echo "$(GO) test $(GOTESTFLAGS) ./..."
	@( FORWARDER_REALVPP_LOG=$(REALVPP_LOG) $(GO) test $(GOTESTFLAGS) ./... 2>&1; echo $$? > $(TEST_LOG).status ) | tee $(TEST_LOG); \
		scripts/test-failures.sh $(TEST_LOG); scripts/realvpp-summary.sh $(REALVPP_LOG); exit $$(cat $(TEST_LOG).status)

# Every fuzz target (found with go test -list '^Fuzz') for FUZZTIME each, e.g. FUZZTIME=10m.
# `make test` replays their committed corpora (testdata/fuzz) as regular tests.
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# Needs Docker, kind, kubectl, git and network access (docs/deploy.md, "Tests").
kind-e2e:
	KIND_E2E=1 $(GO) test -count=1 -v -timeout $(KIND_E2E_TIMEOUT) -run TestKindE2E ./test/kind/

# The forwarder DaemonSet from deployments/ on a real kubelet of this machine, without Docker: a
# one-node cluster (etcd, control plane, containerd, kubelet; Kubernetes built once into
# .cache/k8s/bin by scripts/install-k8s.sh) in a network namespace, SPIRE, NSM, the scenarios, and
# everything removed at the end, also on failure or Ctrl-C (docs/deploy.md, "A real kubelet
# here"). Root; not part of `test`. K8S_E2E_STAGE=cluster|spire|nsm stops after that stage.
K8S_E2E_STAGE ?= all
k8s-e2e: tools
	K8S_E2E_STAGE=$(K8S_E2E_STAGE) scripts/k8s-e2e.sh

# A two-node NSM domain in network namespaces, a client pinging through forwarder-vpp, torn down.
demo:
	scripts/demo.sh

# The field reports' scenarios on the stock-equivalent forwarder (test/stockforwarder) and on
# forwarder-vpp, COMPARE_RUNS times each, as one table; fails when forwarder-vpp fails a scenario
# or is slower than stock beyond the spread of the runs (docs/e2e.md). Root; not part of `test`.
COMPARE_RUNS  ?= 3
COMPARE_FLAGS ?=
# Writes the table into docs/compare.md, headed by the command, commit, date and machine.
compare: tools
	$(GO) run ./test/e2e/cmd/e2e-compare -runs $(COMPARE_RUNS) -command "make compare COMPARE_RUNS=$(COMPARE_RUNS)" $(COMPARE_FLAGS)

# Every forwarder-relevant example of NSM's deployments-k8s v1.18.0 (docs/upstream-examples.md)
# the same way, UPSTREAM_RUNS times each (one run of both forwarders is about two hours), into
# docs/upstream-results.md. Root; not part of `test`.
UPSTREAM_RUNS ?= 1
upstream-compare: tools
	$(GO) run ./test/e2e/cmd/e2e-compare -set upstream -runs $(UPSTREAM_RUNS) -command "make upstream-compare UPSTREAM_RUNS=$(UPSTREAM_RUNS)" $(COMPARE_FLAGS)

# Figures, not pass/fail: policy-route install and restart-recovery cost per policy in four namespace
# shapes (connections x policies), the writes a recovery makes, next to sdk-kernel's iprule. Ten
# iterations each: every iteration builds its namespace anew, untimed, which a time-based count
# would repeat hundreds of times. The results go to docs/bench.md as a table (test/figures).
bench:
	$(GO) run ./test/figures/cmd/figures -out docs/bench.md -format gobench -command "make bench" \
		-title "Policy routes: install and restart recovery per policy" -- \
		$(GO) test -run '^$$' -bench . -benchtime 10x ./internal/networkservice/policyroute/

# Figures, not pass/fail: N connections through one forwarder on the simulator, this project's and
# the stock-equivalent one side by side; the tables go to docs/load.md (test/figures). Root; not part of `test`. LOAD_ROUNDS=k
# runs the series k times, the forwarders taking turns, and pools the rounds' latencies; a round
# of N=10 and 100 takes about 6 minutes here, so give many rounds a longer LOAD_TIMEOUT.
# LOAD_REFRESH=sdk leaves the refreshes to the sdk's refresh client instead of pacing them.
LOAD_N ?= 10,100
LOAD_ROUNDS ?= 1
LOAD_REFRESH ?= paced
LOAD_TIMEOUT ?= 60m
bench-forwarder: tools
	E2E_LOAD_N=$(LOAD_N) E2E_LOAD_ROUNDS=$(LOAD_ROUNDS) E2E_LOAD_REFRESH=$(LOAD_REFRESH) \
	$(GO) run ./test/figures/cmd/figures -out docs/load.md -title "Load: N connections through one forwarder" \
		-command "make bench-forwarder LOAD_N=$(LOAD_N) LOAD_ROUNDS=$(LOAD_ROUNDS) LOAD_REFRESH=$(LOAD_REFRESH)" -- \
		$(GO) test -count=1 -run '^$$' -bench ForwarderLoad -benchtime 1x -timeout $(LOAD_TIMEOUT) ./test/e2e/

# The crash campaign (issue 27, docs/e2e.md): CAMPAIGN_KILLS seeded random SIGKILLs of the forwarder,
# the nsmgr and clients under connect/refresh/close churn, for each of CAMPAIGN_SEEDS, on the
# simulator and, when .cache/vpp (or FORWARDER_TEST_VPP) has a real VPP, on real VPP over veth.
# Prints per seed: kills by target, objects left, foreign objects touched, time; the table goes to
# docs/crash-campaign.md (test/figures). Root; not part of `test`, which runs a short campaign.
CAMPAIGN_KILLS   ?= 100
CAMPAIGN_SEEDS   ?= 1,2,3
CAMPAIGN_TIMEOUT ?= 4h
# The deployments-k8s example scenarios too slow for `make test` (docs/upstream-examples.md), on
# both VPP backends; E2E_FORWARDER=stock runs them on the stock-equivalent.
upstream-slow: tools
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 90m -run '^(TestUpstreamHealRegistryRestart|TestUpstreamHealExamples|TestUpstreamHealLocalNsmgrLocalForwarderMemifToKernel|TestUpstreamFeaturesMultipleServices|TestUpstreamFeaturesExcludePrefixesClient|TestUpstreamFeaturesChangeNseDynamically|TestUpstreamFeaturesKernel2IP2KernelFamilies|TestUpstreamFeaturesNseComposition)$$' ./test/e2e/
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 60m -run '^(TestUpstreamMemifExamples|TestUpstreamMemifHealExamples)$$' ./test/e2e/
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 40m -run '^TestUpstreamVl3$$' ./test/e2e/
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 40m -run '^(TestUpstreamFeaturesExcludePrefixes|TestUpstreamFeaturesIpamPolicies|TestUpstreamUseCasesKernel2RVlanMultiNS)$$' ./test/e2e/
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 40m -run '^TestUpstreamMultiforwarderKernel2Ethernet2Kernel$$' ./test/e2e/
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 40m -run '^(TestUpstreamFeaturesNseCompositionVPP|TestUpstreamUseCasesKernel2RVlanInternal)$$' ./test/e2e/
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 40m -run '^TestUpstreamUseCasesKernel2RVlanBreakout$$' ./test/e2e/
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 40m -run '^TestUpstreamFeaturesVl3Lb$$' ./test/e2e/
	E2E_UPSTREAM_SLOW=1 $(GO) test -count=1 -v -timeout 40m -run '^(TestVl3ForwarderRestart|TestVl3EndpointCrash)$$' ./test/e2e/

crash-campaign: tools
	@echo "crash campaign: $(CAMPAIGN_KILLS) kills for each of seeds $(CAMPAIGN_SEEDS) (progress: campaign: lines; figures: CAMPAIGN lines)"
	@( E2E_CAMPAIGN_KILLS=$(CAMPAIGN_KILLS) E2E_CAMPAIGN_SEEDS=$(CAMPAIGN_SEEDS) $(GO) run ./test/figures/cmd/figures \
		-out docs/crash-campaign.md -title "Crash campaign: seeded SIGKILLs under churn, what was left" \
		-command "make crash-campaign CAMPAIGN_KILLS=$(CAMPAIGN_KILLS) CAMPAIGN_SEEDS=$(CAMPAIGN_SEEDS)" \
		-note "One row per seed and VPP: one node, veth, 30 s tokens, four clients with a policy route each under connect, refresh, close and reconnect churn, foreign objects planted first (a tagged VPP loopback, look-alike veths, a rule and route in the forwarder's table range). After the last kill and the token lifetime: objects of the forwarder's left in any pod, the node, VPP or the journal, and foreign objects changed (docs/e2e.md, Crash campaign)." -- \
		$(GO) test -count=1 -v -timeout $(CAMPAIGN_TIMEOUT) -run '^TestCrashCampaign$$' ./test/e2e/ 2>&1; \
		echo $$? > $(CURDIR)/.cache/crash-campaign.status ) | tee $(CURDIR)/.cache/crash-campaign.log | \
		grep --line-buffered -E 'campaign:|CAMPAIGN|^\s+\||^(=== RUN|--- |\s+--- )|FAIL|ok ' ; \
		echo "figures:"; grep -h 'CAMPAIGN .* seed=' $(CURDIR)/.cache/crash-campaign.log | sed 's/^ *//' | sort -u; \
		exit $$(cat $(CURDIR)/.cache/crash-campaign.status)

clean:
	rm -rf $(BIN)
