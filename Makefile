# forwarder-vpp: build, test and demo targets.
# `make demo` and `make test` are the two commands a fresh machine needs (see README).

GO        ?= go
BIN       := $(CURDIR)/bin
GOTESTFLAGS ?= -count=1 -timeout 40m

.PHONY: all build test vet fmt-check bench demo clean

all: build

build:
	$(GO) build -o $(BIN)/ ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: fmt-check vet
	$(GO) test $(GOTESTFLAGS) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

clean:
	rm -rf $(BIN)
