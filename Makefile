# cairn's everyday commands. `make sim` and `make test` are all a fresh
# machine needs: Go fetches the modules on first use.

GO ?= go

.PHONY: sim test vet fmt-check bench fuzz mutate

# A seeded simulation sweep over the default scenario mix.
sim:
	$(GO) run ./cmd/cairn-sim sweep --seeds 1-500

# The simulator's power on bugs nobody planted: a seeded sample of small
# changes to node and storage code, each judged by the make-sim sweep and
# then the node and storage tests (about a minute per mutant on two
# cores). MUTANTS=0 tries every one; MUTATE_SEED draws another sample.
MUTANTS ?= 40
MUTATE_SEED ?= 1
mutate:
	$(GO) run ./cmd/cairn-mutate --sample $(MUTANTS) --seed $(MUTATE_SEED) --tests ./node,./node/recovery,./storage

# Formatting, vet, every test, the SQS endpoint's tests with real SQS
# clients (interop/, a module of its own so cairn's gains no AWS
# dependency), and a bounded hunt for each planted bug (proof that the
# checkers still catch what they exist to catch). The tests run with the
# garbage collector's target at 400 (unless GOGC is set), as cairn-sim
# runs at 800: most of their time is simulation, which allocates fast and
# keeps little. On the seeds package, two runs each: 15.1 and 15.0 s at
# the default, 11.0 and 10.9 s at 400, the largest RSS 200 MB -> 430 MB.
test: export GOGC ?= 400
test: fmt-check vet
	$(GO) test ./...
	cd interop && $(GO) vet ./... && $(GO) test ./...
	$(GO) test -timeout 30m -tags cairn_bugs -run 'HuntPlantedBugs|BugCorpus|ShrinkPlantedBug' ./props/ ./seeds/ ./shrink/
	$(MAKE) fuzz

# Every decoder and parser that takes outside input, fuzzed for a few
# seconds each (FUZZTIME=1000000x make fuzz for longer). Plain go test
# already replays each target's checked-in corpus; this looks for new
# inputs. Each budget is a count of executions, sized to a few seconds on
# the development machine, not a duration: with a duration, Go's fuzzing
# coordinator can report its own deadline as a failure on a loaded
# machine (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?=
FUZZ_TARGETS = \
	FuzzDecode:./wire:50000x \
	FuzzDecodeBody:./wire:50000x \
	FuzzHandshakeServer:./session:50000x \
	FuzzHandshakeClient:./session:50000x \
	FuzzLoadConfig:./cmd/cairn-node:2000x \
	FuzzParseScenario:./sim:20000x \
	FuzzClientRequests:./node:400x \
	FuzzRequest:./live/sqs:20000x \
	FuzzDecodeEnvelope:./live/sqs:20000x \
	FuzzOpenHandle:./live/sqs:20000x
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; budget=$${rest#*:}; \
		budget=$${FUZZTIME:-$$budget}; \
		echo "fuzz $$name ($$pkg) for $$budget"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget -fuzzminimizetime 2s -parallel 2 $$pkg; \
	done

vet:
	$(GO) vet ./...
	$(GO) vet -tags cairn_bugs ./...

fmt-check:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Benchmarks are not tests: they print measurements, they assert nothing.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./sim/...

# A local three-node cluster in one terminal; Ctrl-C stops it, and so
# does a SIGTERM sent to make alone. The binary is built, then run in
# place of the shell, so that make's child is the cluster itself: make
# passes a SIGTERM on to its child, and `go run` would have exited on it
# and left the cluster running. CLUSTER_FLAGS adds dev flags, such as
# --base-port.
.PHONY: cluster
cluster:
	$(GO) build -o cairn-node ./cmd/cairn-node
	exec ./cairn-node dev --nodes 3 $(CLUSTER_FLAGS)

# Kill a queue's owner once per trial, each on a fresh cluster of three
# cairn-node processes, and print the failover times and any confirmed
# message lost (nonzero exit if one was, or if a trial never recovered).
.PHONY: bench-failover bench-failover-stop bench-failover-leader bench-failover-peer
bench-failover:
	$(GO) run ./cmd/cairn-bench failover --trials 30 --backlog 0 --traffic idle

# The same with a silent failure: SIGSTOP the owner (no connection reset,
# only the heartbeats' silence gives it away), and check that it confirms
# nothing sent to it once it is resumed.
bench-failover-stop:
	$(GO) run ./cmd/cairn-bench failover --trials 30 --fault stop

# The same on five nodes, killing an owner that also leads the metadata
# group, so that a new leader must be elected before the failover.
bench-failover-leader:
	$(GO) run ./cmd/cairn-bench failover --trials 30 --nodes 5 --victim owner+leader

# The partition suite in its measuring mode: each scenario ten times,
# flapping for 30 s rather than 8, with the median, p95 and max of the
# times from the cut to the failover, the first confirmed publish and
# the first fresh delivery, and of the longest gap between
# confirmations. It needs root, iproute2 and iptables (it skips without
# them); make test runs each scenario once. PARTITION_DETECTION=eager
# starts the clusters with eager failure detection.
PARTITION_DETECTION ?= heartbeat
.PHONY: bench-partition
bench-partition:
	$(GO) test -count 1 -timeout 60m -run '^TestPartition$$' -v ./cmd/cairn-node -partition.runs 10 -partition.detection $(PARTITION_DETECTION)

# The SIGKILL trials side by side with NATS JetStream's: each trial also
# kills the leader of an R3 stream on a fresh three-node JetStream cluster,
# and the report gives JetStream's times as ratios of cairn's. BENCH_BIN is
# defined with bench-drain below; its two binaries are installed first.
bench-failover-peer:
	GOBIN="$(BENCH_BIN)" $(GO) install github.com/nats-io/nats-server/v2@v2.15.2
	cd bench && $(GO) build -o "$(BENCH_BIN)/jetstream-peer" ./jetstream
	$(GO) run ./cmd/cairn-bench failover --trials 30 --peer "$(BENCH_BIN)/jetstream-peer --nats-server $(BENCH_BIN)/nats-server"

# Run one cluster of three cairn-node processes under a steady producer
# and an acking subscriber for ten minutes, and print how each node's disk,
# memory and open files grow (nonzero exit if a confirmed message was lost).
.PHONY: bench-soak
bench-soak:
	$(GO) run ./cmd/cairn-bench soak --rate 1000 --duration 10m

# Drain a backlog with an acking subscriber on cairn and, in turn, on a
# three-node NATS JetStream cluster (file storage, every write synced),
# and print both and their ratio. nats-server and the peer harness
# (bench/, a module of its own) are installed into .bench-bin first.
BENCH_BIN ?= $(CURDIR)/.bench-bin
.PHONY: bench-drain
bench-drain:
	GOBIN="$(BENCH_BIN)" $(GO) install github.com/nats-io/nats-server/v2@v2.15.2
	cd bench && $(GO) build -o "$(BENCH_BIN)/jetstream-peer" ./jetstream
	$(GO) run ./cmd/cairn-bench drain --ack async,sync --peer "$(BENCH_BIN)/jetstream-peer --nats-server $(BENCH_BIN)/nats-server"

# Queue creation side by side with JetStream R3 stream creation: three
# rounds of 2,000, 16 creators, each system on fresh clusters in turn.
.PHONY: bench-queues-peer
bench-queues-peer:
	GOBIN="$(BENCH_BIN)" $(GO) install github.com/nats-io/nats-server/v2@v2.15.2
	cd bench && $(GO) build -o "$(BENCH_BIN)/jetstream-peer" ./jetstream
	$(GO) run ./cmd/cairn-bench queues --queues 2000 --concurrency 16 --idle 1s --rounds 3 --peer "$(BENCH_BIN)/jetstream-peer --nats-server $(BENCH_BIN)/nats-server"

# Pipelined confirmed publishing (256 in flight), then one publish at a
# time, on cairn and, window for window, on the same JetStream cluster
# shape; cairn's rate and confirm latency are printed as ratios of
# JetStream's.
.PHONY: bench-throughput-peer
bench-throughput-peer:
	GOBIN="$(BENCH_BIN)" $(GO) install github.com/nats-io/nats-server/v2@v2.15.2
	cd bench && $(GO) build -o "$(BENCH_BIN)/jetstream-peer" ./jetstream
	$(GO) run ./cmd/cairn-bench throughput --peer "$(BENCH_BIN)/jetstream-peer --nats-server $(BENCH_BIN)/nats-server"
	$(GO) run ./cmd/cairn-bench throughput --in-flight 1 --peer "$(BENCH_BIN)/jetstream-peer --nats-server $(BENCH_BIN)/nats-server"
