# cairn's everyday commands. `make sim` and `make test` are all a fresh
# machine needs: Go fetches the modules on first use.

GO ?= go

.PHONY: sim test vet fmt-check bench

# A seeded simulation sweep over the default scenario mix.
sim:
	$(GO) run ./cmd/cairn-sim run --seeds 1-200

# Formatting, vet, and every test (the long ones included).
test: fmt-check vet
	$(GO) test ./...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Benchmarks are not tests: they print measurements, they assert nothing.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./sim/...
