package cluster

// A leader's ISR changes, many at a time. When a broker restarts, every
// partition it follows rejoins its leader's ISR within moments of the
// others: at 3,000 partitions, two leaders each change about a thousand
// ISRs at once. Written one partition at a time (a read, a version-checked
// write and a patch of the view each, one goroutine per partition), they
// queued by the thousand on the view's refresh lock, one whole refresh per
// patch, and the ISR filled over tens of seconds. SetISRs takes the changes
// its leader has gathered and costs, for all of them, one pipelined read of
// their state nodes, one read of the joining brokers' epochs, a few multis
// (isrWriteBatch writes each, all sent at once) and one patch of the view.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// isrWriteBatch bounds the state writes of one ISR multi, as
// controllerWriteBatch does the controller's.
const isrWriteBatch = controllerWriteBatch

// Counts for tests (export_test.go): the multis SetISRs sent, and those
// that failed because a node changed between its read and its write.
var (
	isrMultis    atomic.Int64
	isrConflicts atomic.Int64
)

// ISRChange is a leader's change of the in-sync replicas of one partition
// it leads in LeaderEpoch. MinISR is the topic's min.insync.replicas, and
// LostRecords says that the members taken out lost records they held:
// together they keep the eligible leader replicas (elr.go).
type ISRChange struct {
	Topic       string
	Partition   int32
	LeaderEpoch int32
	ISR         []int32
	MinISR      int
	LostRecords bool
}

// ISRResult is what became of one ISRChange: the state written, or the
// error; with ErrNotLeader, the state that names another leader.
type ISRResult struct {
	State PartitionState
	Err   error
}

// SetISR is SetISRs of one change.
func (z *ZooKeeper) SetISR(ctx context.Context, topic string, partition int32, leaderEpoch int32, isr []int32, minISR int, lostRecords bool) (PartitionState, error) {
	r := z.SetISRs(ctx, []ISRChange{{Topic: topic, Partition: partition, LeaderEpoch: leaderEpoch, ISR: isr, MinISR: minISR, LostRecords: lostRecords}})[0]
	return r.State, r.Err
}

// SetISRs records the leader's changes of its partitions' in-sync
// replicas, one result per change. Each is a write conditional on its
// node's version, made only while the node still names this broker as
// leader in the change's leader epoch (else ErrNotLeader), so a leader the
// controller replaced cannot overwrite its successor's state. A write that
// loses to a concurrent one (the controller's) is read and decided again;
// the others of its multi go again with it. The view shows every written
// state before SetISRs returns. Of two changes of one partition in one
// call, the last is made and the other fails.
func (z *ZooKeeper) SetISRs(ctx context.Context, changes []ISRChange) []ISRResult {
	res := make([]ISRResult, len(changes))
	// Two changes of one node in one multi would fail it, and again each
	// time it is retried: the last change of a partition wins.
	lastOf := map[TopicPartition]int{}
	for i, c := range changes {
		lastOf[TopicPartition{c.Topic, c.Partition}] = i
	}
	var todo []int
	for i, c := range changes {
		if lastOf[TopicPartition{c.Topic, c.Partition}] != i {
			res[i].Err = fmt.Errorf("%s-%d: a later isr change of the partition replaces this one", c.Topic, c.Partition)
			continue
		}
		todo = append(todo, i)
	}
	var written []int
	start := time.Now()
	for len(todo) > 0 {
		if err := ctx.Err(); err != nil {
			for _, i := range todo {
				res[i].Err = err
			}
			break
		}
		var again []int
		ready, versions := z.decideISRs(changes, todo, res)
		for _, batch := range z.writeISRs(changes, ready, versions, res) {
			if batch.retry {
				again = append(again, batch.members...)
			} else if batch.err == nil {
				written = append(written, batch.members...)
			}
		}
		todo = again
	}
	patches := make([]statePatch, len(written))
	for k, i := range written {
		c := changes[i]
		z.watch.Forget(z.s.Paths.PartitionState(c.Topic, c.Partition))
		patches[k] = statePatch{c.Topic, c.Partition, res[i].State}
		// Debug: a restarted broker rejoins thousands of ISRs at once; the
		// ISR metrics count them, and a member leaving is warned of.
		z.log.Debug("isr changed", "topic", c.Topic, "partition", c.Partition, "isr", c.ISR, "elr", res[i].State.ELR, "leader_epoch", c.LeaderEpoch)
	}
	z.patchStates(patches) // not a whole refresh per change (zkmany.go)
	if len(changes) > 1 {
		z.log.Debug("isr changes written", "changes", len(changes), "written", len(written), "took", time.Since(start).Round(time.Millisecond))
	}
	return res
}

// decideISRs reads the state nodes of changes[todo] (pipelined) and
// decides each new state into res[i].State; a change that cannot be made
// gets its error in res[i].Err instead. It returns the changes to write,
// with the versions of the nodes they were decided on.
func (z *ZooKeeper) decideISRs(changes []ISRChange, todo []int, res []ISRResult) (ready []int, versions map[int]int32) {
	type read struct {
		st      PartitionState
		version int32
		err     error
	}
	reads := make([]read, len(todo))
	inParallel(len(todo), func(k int) error {
		c := changes[todo[k]]
		path := z.s.Paths.PartitionState(c.Topic, c.Partition)
		data, stat, err := z.s.Conn.Get(path)
		if err != nil {
			reads[k].err = fmt.Errorf("reading %s: %w", path, err)
			return nil
		}
		reads[k].st, reads[k].err = DecodePartitionStateNode(data)
		reads[k].version = stat.Version
		return nil
	})
	// The joining brokers' epochs, read once for all (withJoiners).
	var joining []int32
	for k, i := range todo {
		r, c := reads[k], changes[i]
		if r.err != nil {
			continue
		}
		for _, id := range c.ISR {
			if !slices.Contains(r.st.ISR, id) && !slices.Contains(joining, id) {
				joining = append(joining, id)
			}
		}
	}
	live, err := z.brokerEpochsOf(joining)
	versions = map[int]int32{}
	for k, i := range todo {
		r, c := reads[k], changes[i]
		switch {
		case r.err != nil:
			res[i].Err = r.err
		case err != nil:
			res[i].Err = err
		case !r.st.LedBy(z.self.ID, z.BrokerEpoch()) || r.st.LeaderEpoch != c.LeaderEpoch:
			res[i] = ISRResult{State: r.st, Err: fmt.Errorf("%w: %s-%d is led by %d in epoch %d (broker epoch %d; this broker's is %d)",
				ErrNotLeader, c.Topic, c.Partition, r.st.Leader, r.st.LeaderEpoch, r.st.LeaderBrokerEpoch, z.BrokerEpoch())}
		default:
			st, err := withJoiners(r.st, c.ISR, c.MinISR, c.LostRecords, live)
			if err != nil {
				res[i].Err = err
				continue
			}
			res[i] = ISRResult{State: st}
			ready = append(ready, i)
			versions[i] = r.version
		}
	}
	return ready, versions
}

// isrMulti is one multi of SetISRs and its outcome: written (err nil),
// to decide again (retry: a node changed or vanished since it was read,
// which fails the whole multi), or failed with err.
type isrMulti struct {
	members []int
	retry   bool
	err     error
}

// writeISRs writes the decided states of changes[ready], isrWriteBatch to
// a multi, all multis at once (the client pipelines them).
func (z *ZooKeeper) writeISRs(changes []ISRChange, ready []int, versions map[int]int32, res []ISRResult) []isrMulti {
	var multis []isrMulti
	for len(ready) > 0 {
		n := min(len(ready), isrWriteBatch)
		multis = append(multis, isrMulti{members: ready[:n]})
		ready = ready[n:]
	}
	inParallel(len(multis), func(m int) error {
		ops := make([]any, len(multis[m].members))
		for k, i := range multis[m].members {
			c := changes[i]
			ops[k] = &zk.SetDataRequest{Path: z.s.Paths.PartitionState(c.Topic, c.Partition), Data: encodeState(res[i].State), Version: versions[i]}
		}
		isrMultis.Add(1)
		_, err := z.s.Conn.Multi(ops...)
		switch {
		case err == nil:
		case errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode):
			isrConflicts.Add(1)
			multis[m].retry = true
		default:
			multis[m].err = fmt.Errorf("writing %d partition states: %w", len(ops), err)
			for _, i := range multis[m].members {
				res[i].Err = multis[m].err
			}
		}
		return nil
	})
	return multis
}

// withJoiners is st with isr as its ISR: members already in sync keep the
// broker epoch recorded for them, and a joining one gets the epoch of its
// registration now, read from ZooKeeper into live: the incarnation whose
// fetch just reached the high watermark (an older one's would have been
// refused by the controller). A joining broker that is not registered is
// an error. The eligible leader replicas follow the change
// (withLeaderISR).
func withJoiners(st PartitionState, isr []int32, minISR int, lostRecords bool, live liveBrokers) (PartitionState, error) {
	for _, id := range isr {
		if _, ok := live[id]; !ok && !slices.Contains(st.ISR, id) {
			return PartitionState{}, fmt.Errorf("broker %d joins the isr but is not registered", id)
		}
	}
	return st.withLeaderISR(isr, minISR, lostRecords, func(id int32) int64 {
		if !slices.Contains(st.ISR, id) {
			return live[id]
		}
		return st.recordedEpoch(id)
	}), nil
}

// statePatch is a state this broker wrote, for patchStates.
type statePatch struct {
	topic string
	p     int32
	st    PartitionState
}

// patchStates puts the states this broker just wrote into the view, and
// tells the view's watchers once. Taking refreshMu orders it after a
// refresh in progress (which may have read the nodes before the writes); a
// refresh after it reads the writes.
func (z *ZooKeeper) patchStates(patches []statePatch) {
	if len(patches) == 0 {
		return
	}
	z.refreshMu.Lock()
	defer z.refreshMu.Unlock()
	z.mu.Lock()
	defer z.mu.Unlock()
	copied := map[string]bool{}
	for _, pt := range patches {
		t, ok := z.topics[pt.topic]
		if !ok || pt.p < 0 || int(pt.p) >= len(t.States) || int(pt.p) >= len(t.Leaders) {
			continue
		}
		if !copied[pt.topic] {
			// Topics handed out share these slices: the patch copies them,
			// once per call.
			t.States, t.Leaders = slices.Clone(t.States), slices.Clone(t.Leaders)
			copied[pt.topic] = true
		}
		t.States[pt.p], t.Leaders[pt.p] = pt.st, pt.st.Leader
		z.topics[pt.topic] = t
	}
	close(z.changed)
	z.changed = make(chan struct{})
}
