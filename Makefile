# The two commands of the README, `make demo` and `make test`, and the
# release binaries.
.PHONY: build demo test fuzz schemas screenshot

# The release binaries, metaharness and the Auto Harness operator's tool
# auto-harness: static (no cgo, so no dynamic loader and no libc to match on
# the host they are copied to), stamped with the version.
BIN ?= metaharness
AH_BIN ?= auto-harness
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

build:
	CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/metaharness
	CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(AH_BIN) ./cmd/auto-harness

demo:
	scripts/demo

test:
	scripts/test

fuzz:
	scripts/loopback-only scripts/fuzz-brief $(or $(FUZZTIME),500000x)

# schemas/generate writes schemas/ from the Go types (its go:generate line).
schemas:
	go generate ./...

# The README's picture of the run page (docs/run-page.png), taken by
# headless Chromium inside the loopback-only namespace (testkit/runpageshot).
screenshot:
	scripts/loopback-only go run ./testkit/runpageshot docs/run-page.png
