package replication

// The leader's ISR writes: a follower joins or leaves the ISR of a
// partition this broker leads, written version-checked to the state node
// (leader.go says when).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tributary-io/tributary/cluster"
)

// isrWrites queues the ISR changes this broker decided as leader for one
// writer goroutine, which writes all it finds queued in one
// cluster.SetISRs: when a broker restarts, the thousands of partitions it
// follows reach the high watermark within moments of each other, and
// written one goroutine each, their writes queued on the cluster view's
// lock by the thousand. While one batch is being written the next
// gathers, so the first change goes at once and no change waits for more
// than the batch before it.
type isrWrites struct {
	once  sync.Once
	wake  chan struct{}
	mu    sync.Mutex
	queue []queuedISR
}

// queuedISR is one decided change and the leader state whose isrChange it
// clears once written (or failed).
type queuedISR struct {
	ls     *leaderState
	change cluster.ISRChange
}

// isrWriter is the cluster metadata that records ISR changes
// (cluster.ZooKeeper).
type isrWriter interface {
	SetISRs(ctx context.Context, changes []cluster.ISRChange) []cluster.ISRResult
}

// changeISR queues a new ISR for a led partition whose ls.isrChange the
// caller set; minISR and lostRecords (the members taken out lost records
// they held) keep its eligible leader replicas.
func (rs *Manager) changeISR(ls *leaderState, topic string, p int32, isr []int32, minISR int, lostRecords bool) {
	q := &rs.isrWrites
	q.once.Do(func() {
		q.wake = make(chan struct{}, 1)
		go rs.writeISRs()
	})
	q.mu.Lock()
	q.queue = append(q.queue, queuedISR{ls: ls, change: cluster.ISRChange{
		Topic: topic, Partition: p, LeaderEpoch: ls.epoch, ISR: isr, MinISR: minISR, LostRecords: lostRecords}})
	q.mu.Unlock()
	signal(q.wake)
}

// writeISRs writes the queued ISR changes until shutdown, all those queued
// at once, and logs the failures of a batch in one line.
func (rs *Manager) writeISRs() {
	q := &rs.isrWrites
	for {
		select {
		case <-rs.env.stopSync:
			return
		case <-q.wake:
		}
		q.mu.Lock()
		batch := q.queue
		q.queue = nil
		q.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		var results []cluster.ISRResult
		if w, ok := rs.env.meta.(isrWriter); ok {
			changes := make([]cluster.ISRChange, len(batch))
			for i, c := range batch {
				changes[i] = c.change
			}
			ctx, cancel := rs.env.ctx()
			ctx, cancelT := context.WithTimeout(ctx, 10*time.Second)
			results = w.SetISRs(ctx, changes)
			cancelT()
			cancel()
		}
		var failed []string
		var first error
		for i, c := range batch {
			c.ls.mu.Lock()
			c.ls.isrChange = false
			c.ls.mu.Unlock()
			if i < len(results) && results[i].Err != nil {
				if first == nil {
					first = results[i].Err
				}
				if len(failed) < 10 {
					failed = append(failed, fmt.Sprintf("%s-%d", c.change.Topic, c.change.Partition))
				}
			}
		}
		if first != nil {
			// One line per batch: a leader that lost thousands of
			// leaderships at once would otherwise log thousands.
			rs.env.logger.Warn("changing the isr failed", "partitions", failed, "changes", len(batch),
				"err", errors.Join(errISRChangeFailed, first))
		}
	}
}

// ShrinkISRs runs until shutdown: every quarter of ReplicaLagMax it takes
// out of the ISRs the followers that have lagged for longer than that, and
// every hwCheckpointEvery it checkpoints the high watermarks.
func (rs *Manager) ShrinkISRs() {
	tick := time.NewTicker(max(rs.lagMax/4, 10*time.Millisecond))
	defer tick.Stop()
	hwTick := time.NewTicker(hwCheckpointEvery)
	defer hwTick.Stop()
	for {
		select {
		case <-rs.env.stopSync:
			return
		case <-hwTick.C:
			rs.checkpointHighWatermarks()
			continue
		case <-tick.C:
		}
		rs.mu.Lock()
		led := make([]*leaderState, 0, len(rs.leading))
		for _, ls := range rs.leading {
			led = append(led, ls)
		}
		rs.mu.Unlock()
		for _, ls := range led {
			rs.shrink(ls)
		}
	}
}

func (rs *Manager) shrink(ls *leaderState) {
	t, ok := rs.env.meta.Topic(ls.key.topic)
	st, sok := t.StateOf(ls.key.p)
	if !ok || !sok || !rs.env.leads(st) || st.LeaderEpoch != ls.epoch {
		rs.mu.Lock()
		if rs.leading[ls.key] == ls {
			delete(rs.leading, ls.key)
		}
		rs.mu.Unlock()
		return
	}
	now := time.Now()
	ls.mu.Lock()
	isr := make([]int32, 0, len(st.ISR))
	for _, id := range st.ISR {
		if f := ls.followers[id]; f != nil && now.Sub(f.caughtUp) > rs.lagMax {
			rs.env.logger.Warn("follower left the isr: it lagged too long", "topic", ls.key.topic, "partition", ls.key.p,
				"follower", id, "fetch_offset", f.end, "lagged_for", now.Sub(f.caughtUp).Round(time.Millisecond))
			continue
		}
		isr = append(isr, id)
	}
	change := len(isr) != len(st.ISR) && !ls.isrChange
	if change {
		ls.isrChange = true
	}
	ls.mu.Unlock()
	if change {
		rs.changeISR(ls, ls.key.topic, ls.key.p, isr, rs.env.minISR(t), false)
	}
}
