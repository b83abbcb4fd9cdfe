package replication

// Replication, the leader's side: for each replicated partition this
// broker leads, what its followers reported and the high watermark.
//
// Followers fetch with the Fetch API, replica id set, from the offset up
// to which their log is fsynced (fetcher.go), so a follower's
// fetch offset is what it holds on disk. The high watermark is the
// smallest such offset over the ISR, the leader's own fsynced end
// included: consumers see nothing above it, and an acks=all produce is
// answered once it passes the batch, so an acknowledged record is on the
// disk of every in-sync replica. It never goes back; a follower that has
// not fetched yet in this leader epoch holds it where it is.
//
// Followers read the leader's log up to its end, flushed or not
// (fetchBounds), so a follower copies and fsyncs a batch while the leader
// fsyncs it too: an acks=all produce waits for the slower of the two
// fsyncs rather than their sum. A follower may so hold records the leader
// loses in a crash; the high watermark never covered them, and the leader
// epochs cut them from the follower's log once a leader without them leads
// (truncate.go).
//
// A follower that has not caught up with the leader's log end for
// ReplicaLagMax leaves the ISR; one whose fetch offset reaches the high
// watermark joins it again. The leader writes such changes to the
// partition's state node, conditionally (cluster.ZooKeeper.SetISR), so a
// leader that was replaced cannot overwrite its successor's state. An
// in-sync follower that fetches below the high watermark lost records it
// had acknowledged (a disk that lost its last writes): it leaves the ISR
// at once.
//
// The high watermark does not move while the ISR is under
// min.insync.replicas: nothing is acknowledged then (acks=all needs that
// many), and the members that left the ISR stay eligible to lead because
// they hold everything under it (cluster/elr.go).
//
// A broker leads only in the broker epoch the state node names it in
// (cluster/brokerepochs.go): restarted, it serves nothing it led before
// until the controller has elected again, so followers never truncate to
// what a restarted leader kept; they hold every acknowledged record, and
// one of them leads.

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/cluster"
)

var (
	errNotLeader       = errors.New("this broker no longer leads the partition")
	errNotEnoughISR    = errors.New("fewer in-sync replicas than min.insync.replicas")
	errReplicaUnknown  = errors.New("the fetching broker is not a replica of the partition")
	errISRChangeFailed = errors.New("isr change not recorded")
)

// Manager is the broker's replication state: the partitions it leads and
// (fetcher.go) the fetchers of the partitions it follows.
type Manager struct {
	env    *env
	lagMax time.Duration

	mu      sync.Mutex
	leading map[partKey]*leaderState
	learned map[partKey]int64 // high watermarks heard from leaders while following, or checkpointed
	// checkpointed is what replication-offset-checkpoint last got
	// (checkpoint.go).
	checkpointed map[partKey]int64
	fetchers     map[int32]*fetcher
	closed       bool // shutting down: no new fetchers

	// gate is held for reading by every fetch round; tests hold it for
	// writing to pause replication (export_test.go).
	gate sync.RWMutex
	// epochRequests counts the OffsetForLeaderEpoch requests the fetchers
	// sent (export_test.go).
	epochRequests atomic.Int64
	// dials and renewals count the fetchers' connections to leaders and
	// their re-authentications on them (KIP-368), for tests.
	dials, renewals atomic.Int64

	// The stray-replica remover (stray.go), started with the
	// fetchers: woken by every view change, done once it stopped.
	strayOnce sync.Once
	strayWake chan struct{}
	strayDone chan struct{}
	// strayRefused (the remover's own) are the partitions whose deletion
	// it could not confirm, warned about once; unconfirmed (under mu) the
	// topics missing from the view whose deletion it could not confirm.
	strayRefused map[partKey]bool
	unconfirmed  map[string]bool

	// reported is the leader epoch in which each offline partition's log
	// end was last reported (logends.go), under mu.
	reported map[partKey]int32

	// The replication throttles (throttle.go), and how many
	// partition fetches they held back (export_test.go).
	leaderQuota, followerQuota replicationQuota
	throttledFetches           atomic.Int64

	isrWrites isrWrites // the leader's ISR changes, written in batches (isr.go)
}

// partKey names a partition in replication's maps.
type partKey struct {
	topic string
	p     int32
}

// leaderState is one led partition in one leader epoch.
type leaderState struct {
	key   partKey
	epoch int32

	// epochStart is the log end offset when this broker began leading in
	// this epoch: everything a previous leader acknowledged lies below it.
	epochStart int64

	mu        sync.Mutex
	hw        int64
	followers map[int32]*followerState
	changed   chan struct{} // closed when hw advances
	isrChange bool          // an ISR write is under way
}

// followerState is what the leader knows of one follower.
type followerState struct {
	end       int64     // the follower's fsynced end: its last fetch offset; -1 before its first fetch
	caughtUp  time.Time // last time it had everything it could read: the leader's log end
	prevEnd   int64     // the leader's log end at the follower's previous fetch
	prevFetch time.Time
}

// New returns the replication state of a broker; its background work
// starts with ShrinkISRs and the first ReconcileFetchers.
func New(d Deps) *Manager {
	rs := &Manager{
		env: newEnv(d), lagMax: d.LagMax,
		leading: map[partKey]*leaderState{}, learned: map[partKey]int64{}, fetchers: map[int32]*fetcher{},
		strayWake: make(chan struct{}, 1), strayDone: make(chan struct{}),
		strayRefused: map[partKey]bool{}, unconfirmed: map[string]bool{}, reported: map[partKey]int32{},
	}
	rs.leaderQuota.now, rs.followerQuota.now = time.Now, time.Now
	rs.loadHighWatermarks()
	return rs
}

// leader returns the state of t's partition p if this broker leads it
// (nil for a partition with one replica, which has none), starting it at
// a new leader epoch.
func (rs *Manager) leader(t cluster.Topic, p int32, l *log.Log) (*leaderState, cluster.PartitionState, error) {
	if !t.Replicated() {
		return nil, cluster.PartitionState{}, nil
	}
	st, ok := t.StateOf(p)
	if !ok || !rs.env.leads(st) {
		return nil, st, errNotLeader
	}
	key := partKey{t.Name, p}
	if rs.damagedLeader(key, st) { // a damaged leader steps down (repair.go)
		return nil, st, errNotLeader
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	ls := rs.leading[key]
	if ls == nil || ls.epoch != st.LeaderEpoch {
		now := time.Now()
		ls = &leaderState{key: key, epoch: st.LeaderEpoch, epochStart: l.LogEndOffset(), followers: map[int32]*followerState{}, changed: make(chan struct{})}
		ls.hw = min(rs.learned[key], l.HighWatermark())
		for _, id := range t.ReplicasOf(p) {
			if id != rs.env.selfID {
				ls.followers[id] = &followerState{end: -1, caughtUp: now, prevFetch: now}
			}
		}
		rs.leading[key] = ls
		// Before anything is appended in this epoch: followers truncate
		// by where each epoch starts (broker/dataapi/offsetforleaderepoch.go).
		if err := l.AssignLeaderEpoch(st.LeaderEpoch); err != nil {
			rs.env.logger.Error("recording the leader epoch failed", "topic", t.Name, "partition", p, "leader_epoch", st.LeaderEpoch, "err", err)
		}
		// Debug: a broker's failure moves thousands of leaderships at once;
		// the controller logs the round, the metrics count the leaders.
		rs.env.logger.Debug("leading partition", "topic", t.Name, "partition", p, "leader_epoch", st.LeaderEpoch, "isr", st.ISR, "high_watermark", ls.hw)
	}
	return ls, st, nil
}

// Lead checks that this broker leads t's partition p (any partition
// with one replica), starting its leader state at a new leader epoch, and
// returns the partition's state.
func (rs *Manager) Lead(t cluster.Topic, p int32, l *log.Log) (cluster.PartitionState, error) {
	_, st, err := rs.leader(t, p, l)
	return st, err
}

// leadForAppend is checked before a batch is appended to a partition
// this broker leads: a replicated partition's leader epoch is then
// recorded, so the batch carries it.
func (rs *Manager) leadForAppend(t cluster.Topic, p int32, l *log.Log) int16 {
	if _, _, err := rs.leader(t, p, l); err != nil {
		code, _ := errorCode(err)
		return code
	}
	return 0
}

// brokerEpocher is cluster metadata that knows this broker's epoch
// (cluster.ZooKeeper; cluster/brokerepochs.go).
type brokerEpocher interface {
	BrokerEpoch() int64
}

// leads reports whether st names this broker as leader in its current
// broker epoch. A broker that restarted (or registered again after a lost
// session) does not lead what it led before until the controller elects
// it again: it may have lost records it acknowledged, and its followers
// must not truncate to it.
func (e *env) leads(st cluster.PartitionState) bool {
	var epoch int64
	if be, ok := e.meta.(brokerEpocher); ok {
		epoch = be.BrokerEpoch()
	}
	return st.LedBy(e.selfID, epoch)
}

// advance recomputes the high watermark over isr; it does not move while
// the ISR has fewer than quorum members (hwQuorum), so that a member that
// left it then still holds everything under it (cluster/elr.go). Call
// with ls.mu held.
func (ls *leaderState) advance(l *log.Log, isr []int32, self int32, quorum int) int64 {
	if len(isr) < quorum {
		return ls.hw
	}
	hw := l.HighWatermark()
	for _, id := range isr {
		if id == self {
			continue
		}
		if f := ls.followers[id]; f == nil || f.end < 0 {
			hw = min(hw, ls.hw)
		} else {
			hw = min(hw, f.end)
		}
	}
	if hw > ls.hw {
		ls.hw = hw
		close(ls.changed)
		ls.changed = make(chan struct{})
	}
	return ls.hw
}

// highWatermark is what consumers of a led partition may read up to, and
// a channel closed when it moves.
func (rs *Manager) highWatermark(t cluster.Topic, p int32, l *log.Log) (int64, <-chan struct{}, error) {
	ls, st, err := rs.leader(t, p, l)
	if ls == nil {
		return l.HighWatermark(), nil, err
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.advance(l, st.ISR, rs.env.selfID, rs.env.hwQuorum(t, p)), ls.changed, nil
}

// hwBehindEpochStart reports whether hw, the high watermark of a
// partition this broker leads, is still below where its leader epoch
// began. A new leader learns its followers' ends only as they fetch, so
// until then its high watermark may lag what the previous leader
// acknowledged: ListOffsets answers OFFSET_NOT_AVAILABLE meanwhile, which
// clients retry, rather than an end that hides acknowledged records (as
// Kafka, KIP-207).
func (rs *Manager) hwBehindEpochStart(t cluster.Topic, p int32, l *log.Log, hw int64) bool {
	ls, _, err := rs.leader(t, p, l)
	return err == nil && ls != nil && hw < ls.epochStart
}

// followerFetched records a follower's fetch at offset (its fsynced end)
// and returns the high watermark to send it. A follower that reached the
// high watermark and is not in the ISR is added to it.
func (rs *Manager) followerFetched(t cluster.Topic, p int32, l *log.Log, replica int32, offset int64) (int64, error) {
	ls, st, err := rs.leader(t, p, l)
	if err != nil {
		return -1, err
	}
	if ls == nil {
		return -1, errReplicaUnknown
	}
	now := time.Now()
	// Caught up is measured against what the follower may read, the log
	// end: against the flushed end, a follower as far behind as one fsync
	// of the leader would count as caught up.
	leo := l.LogEndOffset()
	ls.mu.Lock()
	f := ls.followers[replica]
	if f == nil && slices.Contains(t.ReplicasOf(p), replica) {
		// Added by a reassignment during this leader epoch.
		f = &followerState{end: -1, caughtUp: now, prevFetch: now}
		ls.followers[replica] = f
	}
	if f == nil {
		ls.mu.Unlock()
		return -1, errReplicaUnknown
	}
	// A fetch offset past the log end is a follower whose log diverged:
	// it is not caught up, whatever its offset says.
	if offset <= leo {
		f.end = offset
		if offset >= leo {
			f.caughtUp = now
		} else if offset >= f.prevEnd && f.prevFetch.After(f.caughtUp) {
			f.caughtUp = f.prevFetch
		}
		f.prevEnd, f.prevFetch = leo, now
	}
	// An in-sync follower below the high watermark lost records it had
	// acknowledged (a disk that lost its last writes, a damaged tail cut
	// by recovery): it must not stay electable.
	inSync := slices.Contains(st.ISR, replica)
	leave := inSync && offset < ls.hw && !ls.isrChange
	hw := ls.advance(l, st.ISR, rs.env.selfID, rs.env.hwQuorum(t, p))
	join := !inSync && slices.Contains(t.ReplicasOf(p), replica) && f.end >= hw && !ls.isrChange
	if join || leave {
		ls.isrChange = true
	}
	ls.mu.Unlock()
	switch {
	case join:
		rs.changeISR(ls, t.Name, p, append(slices.Clone(st.ISR), replica), rs.env.minISR(t), false)
	case leave:
		rs.env.logger.Warn("follower left the isr: it fetches below the high watermark, so it lost records it held",
			"topic", t.Name, "partition", p, "follower", replica, "fetch_offset", offset, "high_watermark", hw)
		rs.changeISR(ls, t.Name, p, slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool { return id == replica }), rs.env.minISR(t), true)
	}
	return hw, nil
}
