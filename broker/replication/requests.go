package replication

// What Produce and Fetch ask of replication on a partition this broker
// leads (leader.go keeps the leader's state): acks=all is refused while
// the ISR is under min.insync.replicas and answered once the high
// watermark passes the batch; a follower's fetch reads to the log end and
// reports its progress, a consumer's reads to the high watermark.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// enoughReplicas is checked before an acks=all batch is appended:
// NOT_ENOUGH_REPLICAS while the ISR is smaller than min.insync.replicas,
// so nothing is written that could not be acknowledged. A partition with
// one replica has an ISR of one.
func (rs *Manager) enoughReplicas(t cluster.Topic, p int32) int16 {
	need := rs.env.minISR(t)
	if need <= 1 {
		return 0
	}
	st, ok := t.StateOf(p)
	if !ok || len(st.ISR) < need {
		return kerr.NotEnoughReplicas.Code
	}
	return 0
}

// WaitReplicated is acks=all on a partition: the batch ending at last is
// on this broker's disk and, for a replicated partition, under the high
// watermark (on the disk of every in-sync replica), with the ISR still at
// least min.insync.replicas.
func (rs *Manager) WaitReplicated(ctx context.Context, t cluster.Topic, p int32, l *log.Log, last int64) error {
	e := rs.env
	if err := l.WaitFlushed(ctx, last); err != nil || !t.Replicated() {
		return err
	}
	for {
		metaCh, logCh := e.meta.Changed(), l.Changed()
		cur, _ := e.meta.Topic(t.Name)
		ls, st, err := rs.leader(cur, p, l)
		if err != nil || ls == nil {
			return errNotLeader
		}
		ls.mu.Lock()
		hw := ls.advance(l, st.ISR, e.selfID, e.hwQuorum(cur, p))
		ch := ls.changed
		ls.mu.Unlock()
		if hw > last {
			if len(st.ISR) < e.minISR(cur) {
				return errNotEnoughISR
			}
			return nil
		}
		select {
		case <-ch:
		case <-metaCh:
		case <-logCh:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// ToLogEnd is fetchBounds' read bound for a follower: the leader's log
// end, flushed or not (leader.go).
const ToLogEnd = -2

// errorCode maps replication's own errors (of WaitReplicated, Lead,
// fetchBounds) to the Kafka error code a client gets; false for others.
func errorCode(err error) (int16, bool) {
	switch {
	case errors.Is(err, errNotLeader):
		return kerr.NotLeaderForPartition.Code, true
	case errors.Is(err, errNotEnoughISR):
		return kerr.NotEnoughReplicasAfterAppend.Code, true
	case errors.Is(err, errReplicaUnknown):
		return kerr.ReplicaNotAvailable.Code, true
	}
	return 0, false
}

// fetchBounds decides what a Fetch may read from a partition this broker
// leads: a follower (replica >= 0) reads up to this broker's log end,
// flushed or not (end ToLogEnd; watch closes at the next append), and is
// told the high watermark; a consumer of a replicated partition reads up
// to the high watermark (end; -1: no bound but the flushed end, for a
// partition with one replica), watch closing when it moves. A replica id
// on a partition with one replica is read as a consumer's fetch, as
// before replication.
//
// Serving followers unflushed records lets their append and fsync overlap
// this broker's own fsync instead of following it; the high watermark
// still counts this broker's flushed end, so neither acks=all nor what
// consumers see changes.
func (rs *Manager) fetchBounds(t cluster.Topic, p int32, l *log.Log, replica int32, offset int64) (hw, end int64, watch <-chan struct{}, code int16) {
	if replica >= 0 && t.Replicated() {
		hw, err := rs.followerFetched(t, p, l, replica, offset)
		if err != nil {
			code, _ := errorCode(err)
			return -1, -1, nil, code
		}
		if rs.holdLeaderFetch(t, p, replica) {
			return hw, offset, nil, 0 // no records this time (throttle.go)
		}
		return hw, ToLogEnd, l.Appended(), 0
	}
	if !t.Replicated() {
		return l.HighWatermark(), -1, nil, 0
	}
	hw, watch, err := rs.highWatermark(t, p, l)
	if err != nil {
		code, _ := errorCode(err)
		return -1, -1, nil, code
	}
	return hw, hw, watch, 0
}
