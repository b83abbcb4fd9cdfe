package bench

import (
	"context"
	"fmt"
	"time"
)

// The replicated test: what replication costs a producer that waits for it.
// On one started cluster, one producer sends acks=all (idempotent, kgo's
// default) at each of the producer test's batch sizes into a topic of one
// partition with replication factor 3 and min.insync.replicas=2, and into
// one with replication factor 1, so the RF3/RF1 ratio is of the same
// brokers, client and settings, one run.

// AcksAll is the acks of the replicated rows (Kafka's -1).
const AcksAll = -1

// replicatedMinISR is min.insync.replicas of the RF3 topics: an acks=all
// write survives the loss of one broker, and still succeeds without it.
const replicatedMinISR = 2

// replicatedRows are the replicated test's variants, in table order: each
// batch size of the producer test, RF1 then RF3.
var replicatedRows = func() []struct{ batch, replicas int } {
	var rows []struct{ batch, replicas int }
	for _, p := range producerRows {
		if p.acks != 1 {
			continue
		}
		rows = append(rows, struct{ batch, replicas int }{p.batch, 1}, struct{ batch, replicas int }{p.batch, ClusterNodes})
	}
	return rows
}()

func replicatedTopic(batch, replicas int) string {
	return fmt.Sprintf("bench-rf%d-b%d", replicas, batch)
}

// replicatedDriver is a driver of a system that can replicate a topic.
type replicatedDriver interface {
	// CreateReplicated creates topic with one partition of replicas
	// replicas and min.insync.replicas minISR, and returns once every
	// replica is in sync, so that the row does not time an election.
	CreateReplicated(ctx context.Context, topic string, replicas, minISR int) error
	// ProduceAcksAll sends up to n messages to topic, batch at a time, each
	// batch acknowledged with acks=all by an idempotent producer, and stops
	// early at deadline; as Produce, it returns what it sent and what the
	// broker holds.
	ProduceAcksAll(ctx context.Context, topic string, n, batch int, deadline time.Time) (sent, stored int, err error)
}

// replicated runs the replicated test: one row per replicatedRows entry.
func (r *runner) replicated(ctx context.Context) []Row {
	rows := replicatedTemplate(r.system, "")
	drv, ok := r.drv.(replicatedDriver)
	if !ok {
		for i := range rows {
			rows[i].Status = "failed: this system's client cannot create replicated topics"
		}
		return rows
	}
	// The first acks=all requests pay for idempotent producer ids and the
	// followers' first fetches; not inside a row.
	if err := drv.CreateReplicated(ctx, "bench-rf-warmup", ClusterNodes, replicatedMinISR); err != nil {
		r.log.Warn("replicated warm-up", "err", err)
	} else if _, _, err := drv.ProduceAcksAll(ctx, "bench-rf-warmup", min(20000, r.cfg.Messages), 50, time.Now().Add(5*time.Second)); err != nil {
		r.log.Warn("replicated warm-up", "err", err)
	}
	for i := range rows {
		row := &rows[i]
		minISR := 1
		if row.Replicas > 1 {
			minISR = replicatedMinISR
		}
		topic := replicatedTopic(row.Batch, row.Replicas)
		if err := drv.CreateReplicated(ctx, topic, row.Replicas, minISR); err != nil {
			row.Status = "failed: " + oneLine(err.Error())
			r.log.Warn("replicated", "batch", row.Batch, "replicas", row.Replicas, "err", err)
			continue
		}
		start := time.Now()
		sent, stored, err := drv.ProduceAcksAll(ctx, topic, r.cfg.Messages, row.Batch, start.Add(r.cfg.RowTime))
		elapsed := time.Since(start)
		if err != nil {
			row.Status = "failed: " + oneLine(err.Error())
			r.log.Warn("replicated", "batch", row.Batch, "replicas", row.Replicas, "err", err)
			continue
		}
		row.produced(sent, stored, elapsed)
		r.log.Info("replicated", "batch", row.Batch, "replicas", row.Replicas, "messages", stored, "msgs_per_sec", int(row.MsgsPerSec))
	}
	return rows
}

// replicatedTemplate is the replicated test's rows of system, without
// figures, all with status.
func replicatedTemplate(system, status string) []Row {
	var rows []Row
	for _, v := range replicatedRows {
		rows = append(rows, Row{System: system, Test: TestReplicated, Batch: v.batch, Acks: AcksAll, Replicas: v.replicas, Status: status})
	}
	return rows
}

// computeReplicationRatios sets, on every RF3 row of the replicated test,
// its msgs/s over that of the same system's RF1 row of the same batch.
func computeReplicationRatios(rows []Row) {
	for i, r := range rows {
		if r.Test != TestReplicated || r.Replicas <= 1 || !r.OK() {
			continue
		}
		for _, one := range rows {
			if one.Test == TestReplicated && one.System == r.System && one.Batch == r.Batch &&
				one.Replicas == 1 && one.OK() && one.MsgsPerSec > 0 {
				rows[i].ReplicationRatio = r.MsgsPerSec / one.MsgsPerSec
			}
		}
	}
}
