package replication

// Repair from replicas. A replica of a replicated partition that finds a
// damaged batch in its own log (recovery, the scrubber or a read, see
// broker/log's readcheck.go) does not keep the gap the quarantine leaves
// while another replica holds the batch intact:
//
//   - Before the loss is made durable, log.Config.BeforeLoss records the
//     first lost offset in the partition's repair-from marker
//     (log.RecordRepairFrom); the partition is then pending repair.
//   - A follower pending repair cuts its log back to that offset before
//     its next fetch (log.CutBackForRepair) and fetches everything from
//     there again from its leader. Its fetch offset is below the high
//     watermark until it has, so it is not counted as holding those
//     records.
//   - A leader pending repair stops serving the partition at once (produce
//     and fetch get NOT_LEADER_OR_FOLLOWER, which clients retry; followers
//     too) and asks the controller to hand the leadership to another
//     in-sync replica (cluster.ZooKeeper.StepDown). It then follows, and
//     repairs as a follower. With no other in-sync replica it serves the
//     partition with the gap, and says so, until the ISR grows (a replica
//     that returns may hold the batch: it tries again) or the leader
//     epoch changes.
//
// A read that found the damage is not served either: a consumer handed the
// batches after the gap would commit past offsets that a repair brings
// back.

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

// stepDowner is cluster metadata that moves a leadership away from this
// broker (cluster.ZooKeeper).
type stepDowner interface {
	StepDown(ctx context.Context, topic string, p int32) error
}

// stepDownTimeout bounds a step-down request: past it the leader serves
// the gap rather than nothing.
const stepDownTimeout = 30 * time.Second

// Repair is the broker's repairs in progress. It is the partition table's
// Hooks, so it is made before the table (NewRepair): logs are opened, and
// recovered, before replication starts.
type Repair struct {
	env *env

	// any is set while a map below has an entry, so that produce and fetch
	// of every other partition pass without the lock.
	any atomic.Bool

	mu sync.Mutex
	// pending: partitions with a repair-from marker, to be cut back
	// before this replica next follows.
	pending map[partKey]bool
	// refusing: led partitions not served in that leader epoch because
	// they hold a gap another replica may fill (stepping down).
	refusing map[partKey]int32
	// gapServed: led partitions that could not step down, served with the
	// gap, until the leader epoch changes or the ISR grows (a replica that
	// returns may hold the batch).
	gapServed map[partKey]gapServed
	// cutFailed: the last cut-back error of each partition, logged once.
	cutFailed map[partKey]string
}

// NewRepair returns the repairs of a broker (self) in the cluster view
// meta; closing ends its step-down requests.
func NewRepair(self int32, meta cluster.Metadata, logger *slog.Logger, closing <-chan struct{}) *Repair {
	return &Repair{env: newEnv(Deps{Self: self, Meta: meta, Logger: logger, Closing: closing})}
}

// BeforeLoss is log.Config.BeforeLoss for a replicated partition's log
// (partition.Hooks): record where to fetch again, then act on it.
func (rp *Repair) BeforeLoss(t cluster.Topic, p int32, dir string, fsys log.FS) func(int64) error {
	key := partKey{t.Name, p}
	if !t.Replicated() {
		return nil
	}
	if fsys == nil {
		fsys = log.OSFS{}
	}
	return func(first int64) error {
		if err := log.RecordRepairFrom(fsys, dir, first); err != nil {
			return err
		}
		rp.setPending(key)
		rp.damageFound(key, first)
		return nil
	}
}

// Opened notes a marker left by an earlier run (the process stopped
// before it cut its log back); partition.Hooks.
func (rp *Repair) Opened(t cluster.Topic, p int32, l *log.Log) {
	if !t.Replicated() {
		return
	}
	if _, ok, err := l.RepairFrom(); ok || err != nil {
		rp.setPending(partKey{t.Name, p})
	}
}

func (rp *Repair) setPending(key partKey) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.pending == nil {
		rp.pending, rp.refusing, rp.gapServed, rp.cutFailed = map[partKey]bool{}, map[partKey]int32{}, map[partKey]gapServed{}, map[partKey]string{}
	}
	rp.pending[key] = true
	rp.any.Store(true)
}

// gapServed is when a leader last failed to step down.
type gapServed struct {
	epoch int32
	isr   int
}

// damageFound starts a step-down when this broker leads key.
func (rp *Repair) damageFound(key partKey, first int64) {
	e := rp.env
	if e == nil || e.meta == nil {
		return
	}
	t, _ := e.meta.Topic(key.topic)
	st, ok := t.StateOf(key.p)
	if !ok || st.Leader != e.selfID {
		e.logger.Warn("found a damaged batch: fetching it again from the leader", "topic", key.topic, "partition", key.p, "from_offset", first)
		return
	}
	rp.refuses(key, st.LeaderEpoch, len(st.ISR))
}

// refuses reports whether the led partition key, in leaderEpoch with isr
// in-sync replicas, is not to be served: it is pending repair and a
// step-down is under way (one is started here unless one failed in this
// epoch with as many in-sync replicas).
func (rp *Repair) refuses(key partKey, leaderEpoch int32, isr int) bool {
	if !rp.any.Load() {
		return false
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if e, ok := rp.refusing[key]; ok && e == leaderEpoch {
		return true
	}
	if !rp.pending[key] {
		return false
	}
	if g, ok := rp.gapServed[key]; ok && g.epoch == leaderEpoch && isr <= g.isr {
		return false
	}
	rp.refusing[key] = leaderEpoch
	go rp.stepDown(key, leaderEpoch, isr)
	return true
}

// damagedLeader is Repair.refuses for the leader's checks.
func (rs *Manager) damagedLeader(key partKey, st cluster.PartitionState) bool {
	return rs.env.repair != nil && rs.env.repair.refuses(key, st.LeaderEpoch, len(st.ISR))
}

// refusingRead reports whether a read of topic's partition p, which this
// broker leads, just made is not to be served: its damage was found (the
// read may have been the one to find it) and a step-down is under way.
func (rs *Manager) refusingRead(topic string, p int32) bool {
	return rs.env.repair != nil && rs.env.repair.refusingNow(partKey{topic, p})
}

// refusingNow is refuses for a read already made: was key's damage found
// while this broker leads it (the read may have been the one to find it).
func (rp *Repair) refusingNow(key partKey) bool {
	if !rp.any.Load() {
		return false
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	_, ok := rp.refusing[key]
	return ok
}

func (rp *Repair) stepDown(key partKey, epoch int32, isr int) {
	e := rp.env
	err := errors.New("the cluster metadata cannot move leaderships")
	if sd, ok := e.meta.(stepDowner); ok {
		ctx, cancel := e.ctx()
		ctx, cancelT := context.WithTimeout(ctx, stepDownTimeout)
		err = sd.StepDown(ctx, key.topic, key.p)
		cancelT()
		cancel()
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	switch {
	case err == nil:
		// Refused until the view shows the new leader (a new epoch).
		e.logger.Warn("stepped down as leader of a partition with a damaged batch: another in-sync replica leads, this one fetches the batch back",
			"topic", key.topic, "partition", key.p, "leader_epoch", epoch)
	case errors.Is(err, cluster.ErrNotLeading):
		delete(rp.refusing, key)
	default:
		delete(rp.refusing, key)
		rp.gapServed[key] = gapServed{epoch, isr}
		e.logger.Error("a damaged batch cannot be repaired: no other in-sync replica can lead; serving the partition with the quarantined offsets missing",
			"topic", key.topic, "partition", key.p, "leader_epoch", epoch, "err", err)
	}
}

// repairBeforeFollowing cuts a followed partition pending repair back to
// its marker's offset, before it is fetched; false when it could not be
// (the partition is not fetched this round, and the error is logged once).
func (rp *Repair) repairBeforeFollowing(key partKey, l *log.Log) bool {
	if !rp.any.Load() {
		return true
	}
	rp.mu.Lock()
	pending := rp.pending[key]
	rp.mu.Unlock()
	if !pending {
		return true
	}
	_, _, err := l.CutBackForRepair()
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if err != nil {
		if rp.cutFailed[key] != err.Error() {
			rp.cutFailed[key] = err.Error()
			rp.env.logger.Error("cannot cut a damaged log back to fetch it again: the partition is not followed until this is fixed",
				"topic", key.topic, "partition", key.p, "err", err)
		}
		return false
	}
	delete(rp.pending, key)
	delete(rp.cutFailed, key)
	delete(rp.refusing, key)
	delete(rp.gapServed, key)
	rp.any.Store(len(rp.pending) > 0 || len(rp.refusing) > 0 || len(rp.gapServed) > 0)
	return true
}
