# forwarder-vpp: build, test and demo targets.
# `make demo` and `make test` are the two commands a fresh machine needs (see README).

GO        ?= go
BIN       := $(CURDIR)/bin
GOTESTFLAGS ?= -count=1 -timeout 40m
FUZZTIME  ?= 1m

.PHONY: all build tools test vet fmt-check bench fuzz demo clean

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

# Every fuzz target (found with go test -list '^Fuzz') for FUZZTIME each, e.g. FUZZTIME=10m.
# `make test` replays their committed corpora (testdata/fuzz) as regular tests.
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# A two-node NSM domain in network namespaces, a client pinging through forwarder-vpp, torn down.
demo:
	scripts/demo.sh

# Figures, not pass/fail: policy-route install and restart-recovery cost next to sdk-kernel's iprule.
bench:
	$(GO) test -run '^$$' -bench . ./internal/policyroute/

clean:
	rm -rf $(BIN)
