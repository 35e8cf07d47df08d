# forwarder-vpp: build, test and demo targets.
# `make demo` and `make test` are the two commands a fresh machine needs (see README).

GO        ?= go
BIN       := $(CURDIR)/bin
GOTESTFLAGS ?= -count=1 -timeout 40m

.PHONY: all build tools test vet fmt-check bench demo compare clean

all: build

build:
	$(GO) build -o $(BIN)/ ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# SPIRE (built from the pinned tools module into .cache/bin) and iproute2/ping for the end-to-end
# tests; a no-op once they are there.
tools:
	scripts/install-tools.sh

test: fmt-check vet tools
	$(GO) test $(GOTESTFLAGS) ./...

# A two-node NSM domain in network namespaces, a client pinging through forwarder-vpp, torn down.
demo:
	scripts/demo.sh

# The field reports' scenarios on the stock-equivalent forwarder (test/stockforwarder) and on
# forwarder-vpp, COMPARE_RUNS times each, as one table; fails when forwarder-vpp fails a scenario
# or is slower than stock beyond the spread of the runs (docs/e2e.md). Root; not part of `test`.
COMPARE_RUNS  ?= 3
COMPARE_FLAGS ?=
compare: tools
	$(GO) run ./test/e2e/cmd/e2e-compare -runs $(COMPARE_RUNS) $(COMPARE_FLAGS)

# Figures, not pass/fail: policy-route install and restart-recovery cost next to sdk-kernel's iprule.
bench:
	$(GO) test -run '^$$' -bench . ./internal/policyroute/

clean:
	rm -rf $(BIN)
