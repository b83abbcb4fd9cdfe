package replication

// The leader's ISR writes: a follower joins or leaves the ISR of a
// partition this broker leads, written version-checked to the state node
// (leader.go says when).

import (
	"context"
	"errors"
	"time"
)

// changeISR records a new ISR for a led partition; minISR and
// lostRecords (the members taken out lost records they held) keep its
// eligible leader replicas.
func (rs *Manager) changeISR(ls *leaderState, topic string, p int32, isr []int32, minISR int, lostRecords bool) {
	defer func() {
		ls.mu.Lock()
		ls.isrChange = false
		ls.mu.Unlock()
	}()
	w, ok := rs.env.meta.(isrWriter)
	if !ok {
		return
	}
	ctx, cancel := rs.env.ctx()
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 10*time.Second)
	defer cancelT()
	if _, err := w.SetISR(ctx, topic, p, ls.epoch, isr, minISR, lostRecords); err != nil {
		rs.env.logger.Warn("changing the isr failed", "topic", topic, "partition", p, "isr", isr, "err", errors.Join(errISRChangeFailed, err))
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
