# forwarder-vpp: build, test and demo targets.
# `make demo` and `make test` are the two commands a fresh machine needs (see README).

GO        ?= go
BIN       := $(CURDIR)/bin
GOTESTFLAGS ?= -count=1 -timeout 40m
# Every test that asks for a real VPP (test/realvpp) appends its outcome here; `make test` then
# says how many ran on it.
REALVPP_LOG := $(CURDIR)/.cache/realvpp-tests.log

.PHONY: all build tools test vet fmt-check bench demo clean

all: build

build:
	$(GO) build -o $(BIN)/ ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# SPIRE (built from the pinned tools module into .cache/bin), iproute2/ping for the end-to-end
# tests and the real VPP of ../shared/vpp when it exists (into .cache/vpp); a no-op once they are
# there.
tools:
	scripts/install-tools.sh

test: fmt-check vet tools
	@mkdir -p $(dir $(REALVPP_LOG)) && rm -f $(REALVPP_LOG)
	@echo "$(GO) test $(GOTESTFLAGS) ./..."
	@status=0; FORWARDER_REALVPP_LOG=$(REALVPP_LOG) $(GO) test $(GOTESTFLAGS) ./... || status=$$?; \
		scripts/realvpp-summary.sh $(REALVPP_LOG); exit $$status

# A two-node NSM domain in network namespaces, a client pinging through forwarder-vpp, torn down.
demo:
	scripts/demo.sh

# Figures, not pass/fail: policy-route install and restart-recovery cost next to sdk-kernel's iprule.
bench:
	$(GO) test -run '^$$' -bench . ./internal/policyroute/

clean:
	rm -rf $(BIN)
