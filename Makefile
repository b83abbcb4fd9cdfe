# Tributary: `make run` starts a standalone broker; `make test` runs every
# test against real services, installing what they need.
GO        ?= go
BIN       := bin/tributary
DATA_DIR  ?= ./data
TEST_TIMEOUT ?= 20m

.PHONY: build run run-cluster test test-short vet fuzz bench deps clean

build:
	$(GO) build -o $(BIN) ./cmd/tributary

run: build
	./$(BIN) standalone --data-dir $(DATA_DIR)

# Three brokers and a ZooKeeper on this machine (see README).
run-cluster: build deps
	./scripts/run-cluster.sh

deps:
	./scripts/install-deps.sh

# staticcheck is pinned here, fetched from the Go module proxy on first use.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

vet:
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed on:"; gofmt -l .; exit 1)
	@$(GO) mod tidy -diff || (echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1)
	$(GO) vet ./...
	$(STATICCHECK) ./...

test: deps vet
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...
	cd third_party/colinmarc-hdfs && $(GO) test -race ./internal/transfer/

# Unit tests only, no services (quick feedback while editing): a test that
# starts one (ZooKeeper, HDFS, a JVM, a tributary process, kcat, Python...)
# says so with testenv.Needs, which skips it under -short. The programs
# such tests run are replaced by .ci/refuse here, so a test that forgot to
# say so fails, naming what it ran, instead of starting it. What is left
# mostly waits (timers, loopback), so four packages run at once.
REFUSED = java javac mvn kcat python3 python promtool prometheus chromium prlimit kinit perf
test-short:
	@stubs=$$(mktemp -d) && trap 'rm -rf "$$stubs"' EXIT && \
	for p in $(REFUSED); do ln -s "$(CURDIR)/.ci/refuse" "$$stubs/$$p"; done && \
	PATH="$$stubs:$$PATH" TRIBUTARY_REFUSED_LOG="$$stubs/ran" $(GO) test -short -p 4 ./...; status=$$?; \
	if [ -s "$$stubs/ran" ]; then echo "make test-short: tests ran these without testenv.Needs:"; sort -u "$$stubs/ran"; exit 1; fi; \
	exit $$status

# Every fuzz target of every package (found by scripts/fuzz.sh), each for
# FUZZTIME; longer runs: FUZZTIME=10m make fuzz.
FUZZTIME ?= 20s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

# The paper's experiments, side by side with Apache Kafka, RabbitMQ, ActiveMQ
# and NATS JetStream (installed by scripts/bench/install.sh; a peer that
# cannot be installed or started shows as such in the table). Results also go
# to $(BENCH_OUT)/bench.{txt,json,svg}. The paper's size: BENCH_MESSAGES=10000000.
BENCH_MESSAGES ?= 1000000
BENCH_OUT      ?= bin/bench
BENCH_FLAGS    ?=
bench: build
	-./scripts/bench/install.sh
	baseline=$$(./scripts/bench/build-baseline.sh) || baseline=; \
	./$(BIN) bench --messages $(BENCH_MESSAGES) --out $(BENCH_OUT) --scripts scripts/bench --baseline "$$baseline" $(BENCH_FLAGS)
	$(MAKE) bench-mirror
	$(MAKE) bench-partitions

# The mirror across a WAN: copy rates with 0, 25 and 50 ms one-way delay
# between mirror and source, for 1 and 8 partitions, and the ratios to no
# delay (BenchmarkMirrorWAN, about 5 minutes), also in
# $(BENCH_OUT)/mirror-wan.txt.
.PHONY: bench-mirror
bench-mirror:
	@mkdir -p $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkMirrorWAN$$' -benchtime 1x -timeout 30m ./mirror/ >$(BENCH_OUT)/mirror-wan.txt; \
	status=$$?; cat $(BENCH_OUT)/mirror-wan.txt; exit $$status

# Many partitions (issue 32): a standalone broker with MANY_TOPICS x
# MANY_PARTITIONS partitions (2,000 x 5) beside Apache Kafka on one node:
# create, one acks=all record to each (one request naming all, one request
# each), idle CPU, RSS, descriptors, clean stop, restarts after it and after
# a kill -9; then a 3-broker cluster of one RF 3 topic of MANY_CLUSTER_PARTITIONS
# partitions (3,000): leaders after a kill -9 and full ISR after the
# restart, MANY_ROUNDS (5) times, beside a 3-node Apache Kafka KRaft cluster
# (BenchmarkManyPartitions*, tens of minutes; MANY_SYSTEMS and
# MANY_CLUSTER_SYSTEMS choose among tributary and kafka),
# also in $(BENCH_OUT)/partitions.txt.
MANY_TOPICS             ?= 2000
MANY_PARTITIONS         ?= 5
MANY_CLUSTER_PARTITIONS ?= 3000
MANY_ROUNDS             ?= 5
MANY_SYSTEMS            ?= tributary,kafka
MANY_CLUSTER_SYSTEMS    ?= tributary,kafka
.PHONY: bench-partitions
bench-partitions:
	@mkdir -p $(BENCH_OUT)
	$(GO) test -run '^$$' -bench '^BenchmarkManyPartitions' -benchtime 1x -timeout 120m ./bench/ \
		-many.topics $(MANY_TOPICS) -many.partitions $(MANY_PARTITIONS) \
		-many.systems $(MANY_SYSTEMS) -many.cluster-systems $(MANY_CLUSTER_SYSTEMS) \
		-many.cluster-partitions $(MANY_CLUSTER_PARTITIONS) -many.rounds $(MANY_ROUNDS) >$(BENCH_OUT)/partitions.txt; \
	status=$$?; cat $(BENCH_OUT)/partitions.txt; exit $$status

# The Go micro-benchmarks beside the code (BenchmarkAppend, BenchmarkFetch, ...).
.PHONY: bench-go
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin

# The Jepsen-style test of a replicated 3-broker cluster (kill -9 of
# leaders, SIGSTOP past the session timeout, restarts) for SOAK_DURATION of
# faults instead of the 30 s that `make test` runs; prints the records
# acknowledged, the failovers and the longest failover.
SOAK_DURATION ?= 10m
.PHONY: soak
soak:
	SOAK_DURATION=$(SOAK_DURATION) GO=$(GO) ./scripts/soak.sh
