# The two commands of the README: `make demo` and `make test`.
.PHONY: demo test fuzz schemas

demo:
	scripts/demo

test:
	scripts/test

fuzz:
	scripts/loopback-only scripts/fuzz-brief $(or $(FUZZTIME),500000x)

schemas:
	go generate ./...
