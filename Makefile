# forwarder-vpp: build, test and demo targets.
# `make demo` and `make test` are the two commands a fresh machine needs (see README).

GO        ?= go
BIN       := $(CURDIR)/bin
GOTESTFLAGS ?= -count=1 -timeout 40m

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

# Every fuzz target for FUZZTIME (default 60s) each; `make test` runs their seed corpora already.
fuzz:
	scripts/fuzz.sh

# A two-node NSM domain in network namespaces, a client pinging through forwarder-vpp, torn down.
demo:
	scripts/demo.sh

# Figures, not pass/fail: policy-route install and restart-recovery cost per policy in four namespace
# shapes (connections x policies), the writes a recovery makes, next to sdk-kernel's iprule. Ten
# iterations each: every iteration builds its namespace anew, untimed, which a time-based count
# would repeat hundreds of times.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 10x ./internal/policyroute/

clean:
	rm -rf $(BIN)
