package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The capacity test: how many records a broker acknowledges per second when
// the client is not the limit. Its wire rows pipeline pre-encoded Produce
// requests (wire.go) of one batch of capacityBatch records over 1 and 8
// connections into a topic of capacityPartitions partitions, acks=1 and
// acks=all; its kgo rows are one franz-go producer, batch capacityBatch, one
// request at a time, acks=1 and acks=all (idempotent, kgo's default). The
// systems that speak Kafka's protocol on one node (Tributary, the build of
// BaselineCommit, Kafka at its defaults) are each started fresh per round
// and measured in turn, for Rounds rounds, so that a machine whose load
// drifts weighs on every system alike; a row is the median round.

// Capacity tests, as they appear in rows.
const (
	TestCapacity    = "capacity"     // pipelined wire requests
	TestCapacityKgo = "capacity-kgo" // one kgo producer
)

const (
	capacityBatch      = 50
	capacityPartitions = 8
	// capacityInFlight bounds the unanswered requests per connection: deep
	// enough that a connection never waits on a round trip, shallow enough
	// that a broker is not measured on how much it can queue.
	capacityInFlight = 16
)

// BaselineCommit is the earlier build of Tributary the capacity test
// compares with (scripts/bench/build-baseline.sh builds it): the one of two
// phases ago, with the 200 ms interval flush and before the hardening of
// the request path.
const BaselineCommit = "2e28951"

// baselineSystem is the name of that build's system in the rows.
const baselineSystem = "tributary-" + BaselineCommit

// capacityWireRows and capacityKgoAcks are the test's variants, in table
// order.
var (
	capacityWireRows = []struct{ conns, acks int }{{1, 1}, {1, AcksAll}, {8, 1}, {8, AcksAll}}
	capacityKgoAcks  = []int{1, AcksAll}
)

func init() {
	register(&system{
		name: baselineSystem,
		notes: "Tributary built from commit " + BaselineCommit + " (scripts/bench/build-baseline.sh; --baseline), `standalone` at its " +
			"defaults of then: interval flush (every 200 ms or 10000 messages), acks=all answered after the fsync that covers it; " +
			"measured in the capacity test only",
		capacityOnly: true,
		start:        startBaseline,
		connect:      connectKafka,
	})
}

// startBaseline starts the BaselineCommit build as startTributary starts
// the current one, without the run's --tributary-args (flags of today that
// build may not know).
func startBaseline(ctx context.Context, cfg Config, dir string) (*server, error) {
	if cfg.BaselineBinary == "" {
		return nil, fmt.Errorf("no build of %s given: run scripts/bench/build-baseline.sh and pass its output as --baseline (make bench does both)", BaselineCommit)
	}
	if _, err := os.Stat(cfg.BaselineBinary); err != nil {
		return nil, fmt.Errorf("build of %s: %w (run scripts/bench/build-baseline.sh)", BaselineCommit, err)
	}
	cfg.TributaryBinary, cfg.TributaryArgs = cfg.BaselineBinary, nil
	return startTributary(ctx, cfg, dir)
}

// measuresCapacity reports whether the capacity test runs on s: one node
// speaking Kafka's protocol.
func (s *system) measuresCapacity() bool {
	return s.nodes <= 1 && (s.name == "tributary" || s.name == "kafka" || s.name == baselineSystem)
}

// capacityTemplate is the capacity rows of system, without figures.
func capacityTemplate(system, status string) []Row {
	var rows []Row
	for _, w := range capacityWireRows {
		rows = append(rows, Row{System: system, Test: TestCapacity, Batch: capacityBatch, Acks: w.acks, Connections: w.conns, Status: status})
	}
	for _, a := range capacityKgoAcks {
		rows = append(rows, Row{System: system, Test: TestCapacityKgo, Batch: capacityBatch, Acks: a, Connections: 1, Status: status})
	}
	return rows
}

// runCapacity runs the capacity test on cfg.Systems: Rounds rounds, each
// starting every system in turn, and returns a row per system and variant
// holding the median round.
func runCapacity(ctx context.Context, cfg Config, work string) ([]Row, error) {
	var names []string
	var out []Row
	for _, name := range cfg.Systems {
		sys, ok := systems[name]
		switch {
		case !ok:
			return nil, fmt.Errorf("bench: unknown system %q", name)
		case sys.measuresCapacity():
			names = append(names, name)
		default:
			out = append(out, capacityTemplate(name, "not applicable: measured on tributary, "+baselineSystem+" and kafka")...)
		}
	}
	rounds := map[string][][]Row{} // system → round → rows
	for round := range cfg.Rounds {
		for _, name := range names {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			dir := fmt.Sprintf("%s/capacity-%s-r%d", work, name, round+1)
			rows := capacityRound(ctx, cfg, systems[name], dir, round+1)
			rounds[name] = append(rounds[name], rows)
			if !cfg.Keep {
				os.RemoveAll(dir) // each round's data is only in the way of the next
			}
		}
	}
	for _, name := range names {
		out = append(out, medianRows(rounds[name])...)
	}
	return out, nil
}

// capacityRound starts sys and measures every capacity variant once.
func capacityRound(ctx context.Context, cfg Config, sys *system, dir string, round int) []Row {
	log := cfg.Logger.With("system", sys.name, "test", TestCapacity, "round", round)
	rows := capacityTemplate(sys.name, "")
	failAll := func(status string) []Row {
		for i := range rows {
			rows[i].Status = status
		}
		return rows
	}
	log.Info("starting")
	srv, err := sys.start(ctx, cfg, dir)
	if err != nil {
		log.Warn("not started", "err", err)
		return failAll("not started: " + oneLine(err.Error()))
	}
	defer func() {
		if err := srv.stop(); err != nil {
			log.Warn("stop", "err", err)
		}
	}()
	drv, err := sys.connect(ctx, srv.addr)
	if err != nil {
		return failAll("failed: " + oneLine(err.Error()))
	}
	defer drv.Close()
	kd, ok := drv.(*kafkaDriver)
	if !ok {
		return failAll("failed: this system's client does not speak Kafka's protocol")
	}
	rng := rand.New(rand.NewPCG(uint64(round), 33))
	r := &runner{cfg: cfg, log: log, srv: srv, drv: drv, system: sys.name}
	for i := range rows {
		row := &rows[i]
		name := fmt.Sprintf("capacity-c%d-a%d", row.Connections, row.Acks)
		if row.Test == TestCapacityKgo {
			name = fmt.Sprintf("capacity-kgo-a%d", row.Acks)
		}
		var res wireResult
		var err error
		if row.Test == TestCapacity {
			res, err = r.capacityWire(ctx, kd, name, row.Connections, row.Acks, rng)
		} else {
			res, err = r.capacityKgo(ctx, kd, name, row.Acks)
		}
		switch {
		case err != nil:
			row.Status = "failed: " + oneLine(err.Error())
		case res.acked < res.sent:
			row.Status = fmt.Sprintf("failed: %d of %d records not acknowledged (error code %d: %v)",
				res.sent-res.acked, res.sent, res.refusal, kerr.ErrorForCode(res.refusal))
		case res.acked == 0:
			row.Status = "failed: nothing was acknowledged"
		default:
			row.produced(res.sent, res.acked, res.elapsed)
			row.CPUMicrosPerMsg = res.cpu * 1e6 / float64(res.acked)
		}
		row.Rounds = []float64{row.MsgsPerSec}
		log.Info(row.Test, "connections", row.Connections, "acks", row.Acks, "msgs_per_sec", int(row.MsgsPerSec),
			"cpu_us_per_msg", fmt.Sprintf("%.2f", row.CPUMicrosPerMsg), "status", row.Status)
	}
	return rows
}

// capacityWire creates topic with capacityPartitions partitions, warms it
// up untimed, then times one pipelined run of cfg.CapacityTime: a row of a
// fixed count would last a fraction of a second on the fast systems.
func (r *runner) capacityWire(ctx context.Context, kd *kafkaDriver, topic string, conns, acks int, rng *rand.Rand) (wireResult, error) {
	if err := createPartitioned(ctx, kd.admin, topic, capacityPartitions); err != nil {
		return wireResult{}, err
	}
	frames := newWireFrames(topic, capacityPartitions, capacityBatch, acks, rng)
	// Warm-up: until one run of a fifth of the row's time is acknowledged
	// whole, so that leader elections of a new topic, first segment files
	// and a JVM's compilation are not timed. Only a retriable refusal (a
	// partition not led yet) is tried again.
	give := time.Now().Add(30 * time.Second)
	for {
		res, err := runWire(ctx, r.srv.addr, frames, conns, capacityInFlight, math.MaxInt32, time.Now().Add(r.cfg.CapacityTime/5))
		if err == nil && res.acked == res.sent {
			break
		}
		if err != nil || res.refusal == 0 || !kerr.IsRetriable(kerr.ErrorForCode(res.refusal)) || time.Now().After(give) {
			return wireResult{}, fmt.Errorf("warm-up: %d of %d records acknowledged (error code %d), %v", res.acked, res.sent, res.refusal, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopProfile := r.profile(fmt.Sprintf("%s-c%d-a%d", TestCapacity, conns, acks))
	defer stopProfile()
	cpu := startCPU(r.srv.pids)
	res, err := runWire(ctx, r.srv.addr, frames, conns, capacityInFlight, math.MaxInt32, time.Now().Add(r.cfg.CapacityTime))
	res.cpu = cpu.stop()
	return res, err
}

// capacityKgo times one kgo producer, batch capacityBatch, into a new
// one-partition topic for cfg.CapacityTime: acks=1 without idempotence as
// the produce test, acks=all with kgo's defaults (idempotent). Only records
// whose produce returned no error count; the row ends when the broker holds
// them all.
func (r *runner) capacityKgo(ctx context.Context, kd *kafkaDriver, topic string, acks int) (wireResult, error) {
	if err := kd.createTopic(ctx, topic, 1, nil); err != nil {
		return wireResult{}, err
	}
	n := math.MaxInt32
	stopProfile := r.profile(fmt.Sprintf("%s-a%d", TestCapacityKgo, acks))
	defer stopProfile()
	cpu := startCPU(r.srv.pids)
	start := time.Now()
	var sent, stored int
	var err error
	if acks == AcksAll {
		sent, stored, err = kd.ProduceAcksAll(ctx, topic, n, capacityBatch, start.Add(r.cfg.CapacityTime))
	} else {
		sent, stored, err = kd.Produce(ctx, topic, n, capacityBatch, true, start.Add(r.cfg.CapacityTime))
	}
	return wireResult{sent: sent, acked: stored, elapsed: time.Since(start), cpu: cpu.stop()}, err
}

// createPartitioned creates topic with partitions partitions of one replica
// and waits until each has a leader.
func createPartitioned(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		tds, err := adm.ListTopics(ctx, topic)
		if err == nil {
			err = tds.Error()
		}
		if err == nil {
			led := 0
			for _, p := range tds[topic].Partitions {
				if p.Err == nil && p.Leader >= 0 {
					led++
				}
			}
			if led == partitions {
				return nil
			}
			err = fmt.Errorf("%d of %d partitions have a leader", led, partitions)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s: %w", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// medianRows folds one system's rounds into one row per variant: the round
// of median msgs/s (the upper one of an even count), with every round's
// figure in Rounds. A variant that failed in any round is reported failed,
// with that round's reason: a median of the rounds that worked would hide
// it.
func medianRows(rounds [][]Row) []Row {
	if len(rounds) == 0 {
		return nil
	}
	out := slices.Clone(rounds[0])
	for i := range out {
		var ok []Row
		var figures []float64
		failed := ""
		for ri, rows := range rounds {
			r := rows[i]
			figures = append(figures, r.MsgsPerSec)
			if r.OK() {
				ok = append(ok, r)
			} else if failed == "" {
				failed = fmt.Sprintf("round %d of %d: %s", ri+1, len(rounds), r.Status)
				if strings.HasPrefix(r.Status, "not started: ") {
					failed = r.Status // the table gives its reason once
				}
			}
		}
		if failed != "" {
			out[i] = Row{System: out[i].System, Test: out[i].Test, Batch: out[i].Batch, Acks: out[i].Acks,
				Connections: out[i].Connections, Rounds: figures, Status: failed}
			continue
		}
		slices.SortFunc(ok, func(a, b Row) int { return cmp.Compare(a.MsgsPerSec, b.MsgsPerSec) })
		med := ok[len(ok)/2]
		med.Rounds = figures
		out[i] = med
	}
	return out
}

// capacityDiskFraction fills, on the capacity rows, their payload MB/s
// over the disk's sequential write bandwidth measured in the same run.
func capacityDiskFraction(rows []Row, c *Ceiling) {
	if c == nil || c.DiskMBPerSec <= 0 {
		return
	}
	for i := range rows {
		if (rows[i].Test == TestCapacity || rows[i].Test == TestCapacityKgo) && rows[i].OK() {
			rows[i].DiskFraction = rows[i].MBPerSec / c.DiskMBPerSec
		}
	}
}
