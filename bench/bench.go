// Package bench reruns the experiments of the 2011 Kafka paper on this
// machine, for Tributary and, in the same run, for the peers the machine
// can start: Apache Kafka (KRaft), RabbitMQ, ActiveMQ and NATS JetStream.
//
// Every system runs as its own process on loopback, started fresh for the
// run and stopped after it, and is measured with the same tests:
//
//   - produce: one producer, 200-byte messages, batch 1 and 50 (messages per
//     request), fire-and-forget (acks=0, the paper's producer) and
//     acknowledged by the broker (acks=1). A row ends when the broker holds
//     every message sent, so fire-and-forget cannot outrun the broker; the
//     data directory's growth gives the storage overhead per message.
//   - consume: one consumer reading the batch-50 acks=1 data back from the
//     page cache, prefetching about 200 KB (1000 messages) per request.
//   - latency: produce-to-consume p50/p99 at a fixed moderate rate.
//   - replicated: on a three-broker system (tributary-rf3, kafka-rf3), one
//     producer with acks=all at batch 1 and 50 into a topic of replication
//     factor 3 (min.insync.replicas=2) and into one of replication factor 1,
//     with the ratio of the two; the other tests run on the one-node systems
//     and this one on the clusters, each reporting the other as not
//     applicable.
//   - capacity: batch-50 produce when the client is not the limit:
//     pre-encoded requests pipelined over 1 and 8 connections into 8
//     partitions, acks=1 and acks=all, and one kgo producer, on Tributary,
//     Tributary's build of BaselineCommit and Kafka, each started fresh in
//     turn for three rounds; a row is a system's median round, also read
//     against the disk's sequential write bandwidth (capacity.go).
//   - memory: the broker processes' peak RSS (VmHWM) over all their tests,
//     summed over the processes of a cluster (ZooKeeper included).
//
// The same client library, kgo, drives Tributary and Kafka, so those two
// rows compare brokers, not clients. What is promised: a system that cannot
// be started, or a test that fails, is a row with its reason, never a gap;
// figures of different systems come from the same run and are compared as
// ratios to Tributary (to tributary-rf3 for the three-node systems) beside
// their absolute values.
package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MessageSize is the paper's message size in bytes.
const MessageSize = 200

// Tests, as they appear in rows.
const (
	TestProduce    = "produce"
	TestConsume    = "consume"
	TestLatency    = "latency"
	TestReplicated = "replicated"
	TestMemory     = "memory"
	TestCeiling    = "ceiling"
)

// Config says what to run.
type Config struct {
	// Messages per producer row (the paper: 10 million).
	Messages int
	// Systems to measure, in order; Tributary is always measured first
	// since every ratio is to it, and tributary-rf3 next when any
	// three-node system is measured. Empty means all of AllSystems.
	Systems []string
	// Tests to run against each system, a subset of AllTests; empty means
	// all. Consume reads back what produce wrote, so it needs produce.
	Tests []string
	// RowTime caps one producer or consumer row: a row that has not sent
	// Messages by then stops and reports what it did.
	RowTime time.Duration
	// LatencyRate (messages per second) and LatencyTime shape the latency
	// test.
	LatencyRate int
	LatencyTime time.Duration
	// WorkDir holds every system's data; a temporary directory if empty.
	// The run removes what it created unless Keep is set.
	WorkDir string
	Keep    bool
	// TributaryBinary is the `tributary` executable to start, and
	// TributaryArgs extra flags for its `standalone` command (e.g. a
	// different --flush-interval, to see what the latency row owes to it).
	TributaryBinary string
	TributaryArgs   []string
	// Scripts is the directory of peer.sh (scripts/bench), and PeerEnv
	// more environment for it (KAFKA_HEAP=768m: each Kafka JVM's heap).
	Scripts string
	PeerEnv []string
	// BaselineBinary is the build of BaselineCommit the capacity test
	// compares with (scripts/bench/build-baseline.sh prints its path).
	BaselineBinary string
	// Rounds is how many times the capacity test starts and measures each
	// system, alternating them (default 3).
	Rounds int
	// CapacityTime is how long each capacity row sends (default 5s).
	CapacityTime time.Duration
	// ProfileDir, if set, gets a `perf record` profile of the Tributary
	// broker process per row (needs perf on PATH).
	ProfileDir string
	// SkipCeiling leaves out the loopback and disk measurement.
	SkipCeiling bool
	Logger      *slog.Logger
}

// AllSystems are the systems a run measures by default.
var AllSystems = []string{"tributary", "kafka", "kafka-flush", "rabbitmq", "activemq", "nats",
	"tributary-rf3", "kafka-rf3", "kafka-rf3-flush", baselineSystem}

// AllTests are the tests a run can select, in the order they run; memory
// is measured over whichever of the others ran.
var AllTests = []string{TestProduce, TestConsume, TestLatency, TestReplicated, TestCapacity, TestMemory}

func (c Config) withDefaults() Config {
	if c.Messages <= 0 {
		c.Messages = 10_000_000
	}
	if len(c.Systems) == 0 {
		c.Systems = AllSystems
	}
	// Tributary first, once: every ratio is to it; and tributary-rf3 as
	// the reference of the three-node systems.
	systems := []string{"tributary"}
	if slices.ContainsFunc(c.Systems, func(s string) bool { return nodesOf(s) > 1 }) {
		systems = append(systems, "tributary-rf3")
	}
	for _, s := range c.Systems {
		if !slices.Contains(systems, s) {
			systems = append(systems, s)
		}
	}
	c.Systems = systems
	if len(c.Tests) == 0 {
		c.Tests = AllTests
	}
	if c.RowTime <= 0 {
		c.RowTime = 20 * time.Second
	}
	if c.Rounds <= 0 {
		c.Rounds = 3
	}
	if c.CapacityTime <= 0 {
		c.CapacityTime = 5 * time.Second
	}
	if c.LatencyRate <= 0 {
		c.LatencyRate = 1000
	}
	if c.LatencyTime <= 0 {
		c.LatencyTime = 5 * time.Second
	}
	if c.Scripts == "" {
		c.Scripts = filepath.Join("scripts", "bench")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Report is the outcome of a run.
type Report struct {
	Messages    int      `json:"messages"`
	MessageSize int      `json:"message_size"`
	Ceiling     *Ceiling `json:"ceiling,omitempty"`
	Rows        []Row    `json:"rows"`
	// Notes say, per system, how durable it was configured and what acks
	// and batch mean for it.
	Notes map[string]string `json:"notes"`
}

// Row is one measurement of one system. Throughput rows fill MsgsPerSec and
// MBPerSec (payload megabytes, 10^6 bytes); latency rows P50Ms and P99Ms;
// memory rows PeakRSSMB. Ratio is to the row of the same test, batch, acks
// and replication factor of Tributary (of tributary-rf3 for a three-node
// system): of msgs/s for produce, consume and replicated, of p50 for
// latency, of peak RSS for memory.
type Row struct {
	System string `json:"system"`
	Test   string `json:"test"`
	Batch  int    `json:"batch"`
	// Acks is 0, 1, or AcksAll (-1).
	Acks int `json:"acks"`
	// Replicas is the replication factor of the replicated test's topic.
	Replicas int `json:"replication_factor,omitempty"`
	// Connections is how many connections the client used (capacity rows).
	Connections int `json:"connections,omitempty"`
	// Rounds are the msgs/s of each round of a capacity row; the row's
	// figures are of the median one.
	Rounds []float64 `json:"rounds_msgs_per_sec,omitempty"`
	// DiskFraction, on a capacity row, is its payload MB/s over the disk's
	// sequential write bandwidth measured in the same run.
	DiskFraction float64 `json:"disk_fraction,omitempty"`
	// CPUMicrosPerMsg, on a capacity row, is the CPU time (user and
	// system, all threads) the broker's processes spent per acknowledged
	// message during the timed run (bench/cpu.go); 0 when not measured.
	CPUMicrosPerMsg float64 `json:"cpu_us_per_msg,omitempty"`
	Messages        int     `json:"messages"`
	Seconds         float64 `json:"seconds"`
	MsgsPerSec      float64 `json:"msgs_per_sec"`
	MBPerSec        float64 `json:"mb_per_sec"`
	// OverheadBytes is disk bytes per message beyond the payload (produce
	// rows); nil when not measured.
	OverheadBytes *float64 `json:"overhead_bytes_per_msg,omitempty"`
	P50Ms         float64  `json:"p50_ms,omitempty"`
	P99Ms         float64  `json:"p99_ms,omitempty"`
	PeakRSSMB     float64  `json:"peak_rss_mb,omitempty"`
	Ratio         float64  `json:"ratio_to_tributary,omitempty"`
	// ReplicationRatio, on a replicated row of replication factor 3, is its
	// msgs/s over the same system's replication factor 1 row of its batch.
	ReplicationRatio float64 `json:"rf3_to_rf1,omitempty"`
	// Status is "ok", or why the row has no figures ("not started: ...",
	// "failed: ...", "not applicable: ..."), or what went wrong beside them
	// ("lost 12 of ...").
	Status string `json:"status"`
}

// OK reports whether the row carries figures.
func (r Row) OK() bool { return r.Status == "ok" || strings.HasPrefix(r.Status, "lost ") }

// produced fills a produce row's figures: stored of sent messages in
// elapsed, and "lost ..." when the broker holds fewer than were sent.
func (r *Row) produced(sent, stored int, elapsed time.Duration) {
	r.Messages = stored
	r.Seconds = elapsed.Seconds()
	r.MsgsPerSec = float64(stored) / elapsed.Seconds()
	r.MBPerSec = r.MsgsPerSec * MessageSize / 1e6
	r.Status = "ok"
	if stored < sent {
		r.Status = fmt.Sprintf("lost %d of %d", sent-stored, sent)
	}
}

// producerRows are the producer test's variants, in table order.
var producerRows = []struct{ batch, acks int }{{1, 0}, {1, 1}, {50, 0}, {50, 1}}

// consumeFrom is the producer row whose data the consumer test reads back.
var consumeFrom = struct{ batch, acks int }{50, 1}

func topicName(batch, acks int) string { return fmt.Sprintf("bench-b%d-a%d", batch, acks) }

// Run measures every configured system, one after the other.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.TributaryBinary == "" {
		return nil, fmt.Errorf("bench: no tributary binary given")
	}
	for _, t := range cfg.Tests {
		if !slices.Contains(AllTests, t) {
			return nil, fmt.Errorf("bench: unknown test %q (known: %s)", t, strings.Join(AllTests, ", "))
		}
	}
	if cfg.runs(TestConsume) && !cfg.runs(TestProduce) {
		return nil, fmt.Errorf("bench: the %s test reads back what %s wrote: select both", TestConsume, TestProduce)
	}
	work := cfg.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "tributary-bench-")
		if err != nil {
			return nil, err
		}
		work = d
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(work)
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
	}

	rep := &Report{Messages: cfg.Messages, MessageSize: MessageSize, Notes: map[string]string{}}
	// The ceiling is what the throughput rows are read against.
	if !cfg.SkipCeiling && (cfg.runs(TestProduce) || cfg.runs(TestConsume) || cfg.runs(TestCapacity)) {
		c, err := MeasureCeiling(ctx, work)
		if err != nil {
			cfg.Logger.Warn("machine ceiling not measured", "err", err)
		} else {
			rep.Ceiling = c
		}
	}
	// The capacity test starts the systems anew, round after round; the
	// other tests share one start per system.
	each := cfg
	each.Tests = slices.DeleteFunc(slices.Clone(cfg.Tests), func(t string) bool { return t == TestCapacity })
	for _, name := range cfg.Systems {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sys, ok := systems[name]
		if !ok {
			return nil, fmt.Errorf("bench: unknown system %q (known: %s)", name, strings.Join(AllSystems, ", "))
		}
		rep.Notes[name] = sys.notes
		if name != baselineSystem && strings.HasPrefix(name, "tributary") && len(cfg.TributaryArgs) > 0 {
			rep.Notes[name] += ". Broker flags of this run: " + strings.Join(cfg.TributaryArgs, " ")
		}
		if len(each.Tests) > 0 && !sys.capacityOnly {
			rep.Rows = append(rep.Rows, runSystem(ctx, each, sys, filepath.Join(work, name))...)
		}
	}
	if cfg.runs(TestCapacity) {
		rows, err := runCapacity(ctx, cfg, work)
		if err != nil {
			return nil, err
		}
		capacityDiskFraction(rows, rep.Ceiling)
		rep.Rows = append(rep.Rows, rows...)
	}
	computeRatios(rep.Rows)
	computeReplicationRatios(rep.Rows)
	return rep, nil
}

// runSystem starts one system, runs every test against it and stops it.
// It always returns the full set of rows, with reasons where figures are
// missing.
func runSystem(ctx context.Context, cfg Config, sys *system, dir string) []Row {
	log := cfg.Logger.With("system", sys.name)
	if !cfg.needsStart(sys) {
		log.Info("no selected test applies", "nodes", max(1, sys.nodes))
		return allRows(cfg, sys, "")
	}
	log.Info("starting")
	srv, err := sys.start(ctx, cfg, dir)
	if err != nil {
		log.Warn("not started", "err", err)
		return allRows(cfg, sys, "not started: "+oneLine(err.Error()))
	}
	defer func() {
		if err := srv.stop(); err != nil {
			log.Warn("stop", "err", err)
		}
	}()
	drv, err := sys.connect(ctx, srv.addr)
	if err != nil {
		log.Warn("no client connection", "err", err)
		return allRows(cfg, sys, "failed: "+oneLine(err.Error()))
	}
	defer drv.Close()

	r := &runner{cfg: cfg, log: log, srv: srv, drv: drv, system: sys.name}
	if sys.applies(TestProduce) {
		r.warmUp(ctx) // the replicated test warms up on its own topics
	}
	var rows []Row
	for _, t := range cfg.Tests {
		if !sys.applies(t) {
			rows = append(rows, testRows(sys.name, t, notApplicable(sys))...)
		}
	}
	sent := map[[2]int]int{}
	if cfg.runs(TestProduce) && sys.applies(TestProduce) {
		for _, p := range producerRows {
			row := r.produce(ctx, p.batch, p.acks)
			sent[[2]int{p.batch, p.acks}] = row.Messages
			rows = append(rows, row)
		}
	}
	if cfg.runs(TestConsume) && sys.applies(TestConsume) {
		rows = append(rows, r.consume(ctx, topicName(consumeFrom.batch, consumeFrom.acks), sent[[2]int{consumeFrom.batch, consumeFrom.acks}]))
	}
	if cfg.runs(TestLatency) && sys.applies(TestLatency) {
		rows = append(rows, r.latency(ctx))
	}
	if cfg.runs(TestReplicated) && sys.applies(TestReplicated) {
		rows = append(rows, r.replicated(ctx)...)
	}
	if cfg.runs(TestMemory) {
		rows = append(rows, r.memory())
	}
	return rows
}

// needsStart reports whether a selected test applies to sys; memory alone
// counts only when it is all that was selected.
func (c Config) needsStart(sys *system) bool {
	for _, t := range c.Tests {
		if sys.applies(t) && (t != TestMemory || len(c.Tests) == 1) {
			return true
		}
	}
	return false
}

func (c Config) runs(test string) bool { return slices.Contains(c.Tests, test) }

// allRows is the row set of a system with no figures: one per selected
// test and variant, with status, or for a test that does not apply to sys
// the reason why.
func allRows(cfg Config, sys *system, status string) []Row {
	var rows []Row
	for _, t := range cfg.Tests {
		st := status
		if !sys.applies(t) || status == "" {
			st = notApplicable(sys)
		}
		rows = append(rows, testRows(sys.name, t, st)...)
	}
	return rows
}

// testRows are the rows of one test of system, without figures.
func testRows(system, test, status string) []Row {
	switch test {
	case TestProduce:
		var rows []Row
		for _, p := range producerRows {
			rows = append(rows, Row{System: system, Test: TestProduce, Batch: p.batch, Acks: p.acks, Status: status})
		}
		return rows
	case TestConsume:
		return []Row{{System: system, Test: TestConsume, Batch: 1000, Status: status}}
	case TestLatency:
		return []Row{{System: system, Test: TestLatency, Batch: 1, Acks: 1, Status: status}}
	case TestReplicated:
		return replicatedTemplate(system, status)
	case TestMemory:
		return []Row{{System: system, Test: TestMemory, Status: status}}
	case TestCapacity:
		return capacityTemplate(system, status)
	}
	return nil
}

// notApplicable is the status of a test that sys does not run.
func notApplicable(sys *system) string {
	if sys.nodes > 1 {
		return "not applicable: measured on the one-node systems"
	}
	return "not applicable: needs a three-node system (tributary-rf3, kafka-rf3)"
}

// referenceSystem is the Tributary system the rows of system are compared
// with: the one of the same number of nodes.
func referenceSystem(system string) string {
	if nodesOf(system) > 1 {
		return "tributary-rf3"
	}
	return "tributary"
}

func computeRatios(rows []Row) {
	metric := func(r Row) float64 {
		switch r.Test {
		case TestLatency:
			return r.P50Ms
		case TestMemory:
			return r.PeakRSSMB
		default:
			return r.MsgsPerSec
		}
	}
	for i := range rows {
		if !rows[i].OK() {
			continue
		}
		for _, t := range rows {
			if t.System == referenceSystem(rows[i].System) && t.Test == rows[i].Test && t.Batch == rows[i].Batch &&
				t.Acks == rows[i].Acks && t.Replicas == rows[i].Replicas && t.Connections == rows[i].Connections &&
				t.OK() && metric(t) > 0 {
				rows[i].Ratio = metric(rows[i]) / metric(t)
			}
		}
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	lines := strings.Split(s, "\n")
	// The most telling line of a failed start is usually its first; keep it
	// and the last so the table stays one line per row.
	if len(lines) > 1 {
		s = lines[0] + " … " + strings.TrimSpace(lines[len(lines)-1])
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
