package replication

// Stray replicas: a broker's copy of a partition it is no longer a
// replica of, left behind once a reassignment moved the partition to
// other brokers (cluster/reassign.go). The broker deletes it, as Kafka's
// StopReplica with delete does: its fetcher stops copying the partition
// (ReconcileFetchers follows the view), then the partition's log is
// closed and its directory removed (segments, indexes, the leader-epoch
// checkpoint), and its high watermark leaves the high-watermark
// checkpoint at its next write. One log line is written per deletion.
//
// Deleting data is the one thing here that cannot be undone, so the view
// alone never decides it: a partition is a candidate when the view names
// its replicas, settled (no reassignment under way), without this broker;
// it is deleted only when its topic node, read from ZooKeeper at that
// moment (cluster.ZooKeeper.AssignedReplicas), says the same. A topic the
// view lacks, a partition without an explicit replica list, a node that
// cannot be read (a session hiccup, a connection cut) or decoded: all
// keep the data, and an unreadable one is tried again after strayRetry.
// A whole topic missing from the view goes by the same rule
// (topicDeleted): only once ZooKeeper confirms its node is gone.

import (
	"maps"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/broker/partition"
	"github.com/tributary-io/tributary/cluster"
)

// strayRetry is how long a deletion refused for an unreadable assignment
// waits before it is tried again.
const strayRetry = 2 * time.Second

// assignmentReader is cluster metadata that reads a partition's replicas
// from the shared record itself (cluster.ZooKeeper).
type assignmentReader interface {
	AssignedReplicas(topic string, p int32) ([]int32, error)
}

// testHookBeforeStrayCheck, when set, runs before a candidate's
// assignment is read from ZooKeeper: tests make that read fail there.
var testHookBeforeStrayCheck atomic.Pointer[func(topic string, p int32)]

// removeStrays runs until shutdown, deleting stray replicas whenever the
// view changes (strayWake) and after a refused deletion.
func (rs *Manager) removeStrays() {
	defer close(rs.strayDone)
	var retry <-chan time.Time
	for {
		select {
		case <-rs.env.stopSync:
			return
		case <-rs.strayWake:
		case <-retry:
		}
		retry = nil
		strays, topics := rs.deleteStrays(), rs.recheckTopics()
		if strays || topics {
			retry = time.After(strayRetry)
		}
	}
}

// deleteStrays deletes the stray replicas it can confirm; it reports
// whether one could not be confirmed (to try again later).
func (rs *Manager) deleteStrays() (retry bool) {
	ar, ok := rs.env.meta.(assignmentReader)
	if !ok {
		return false
	}
	for _, k := range rs.strayCandidates() {
		if hook := testHookBeforeStrayCheck.Load(); hook != nil {
			(*hook)(k.topic, k.p)
		}
		replicas, err := ar.AssignedReplicas(k.topic, k.p)
		if err != nil {
			if !rs.strayRefused[k] { // once, not at every retry
				rs.env.logger.Warn("keeping a partition this broker may no longer be a replica of: its assignment could not be confirmed; checking again",
					"topic", k.topic, "partition", k.p, "err", err)
			}
			rs.strayRefused[k] = true
			retry = true
			continue
		}
		delete(rs.strayRefused, k)
		if slices.Contains(replicas, rs.env.selfID) {
			continue // the view was behind
		}
		rs.deleteStray(k, replicas)
	}
	return retry
}

// strayCandidates lists the partitions with a directory here whose
// replicas, as the view names them, settled and explicit, leave this
// broker out.
func (rs *Manager) strayCandidates() []partKey {
	stored, err := rs.env.logs.Stored()
	if err != nil {
		return nil
	}
	var out []partKey
	for _, k := range stored {
		t, ok := rs.env.meta.Topic(k.Topic)
		if ok && rs.notReplicaOf(t, k.Partition) {
			out = append(out, partKey{k.Topic, k.Partition})
		}
	}
	return out
}

// notReplicaOf: the view lists partition p's replicas, it is not being
// moved, and this broker is neither among them nor its leader.
func (rs *Manager) notReplicaOf(t cluster.Topic, p int32) bool {
	if !t.Replicated() || p >= t.Partitions() || int(p) >= len(t.Replicas) || len(t.Replicas[p]) == 0 {
		return false
	}
	if _, moving := t.Reassigning[p]; moving {
		return false
	}
	st, _ := t.StateOf(p)
	return !slices.Contains(t.Replicas[p], rs.env.selfID) && st.Leader != rs.env.selfID && t.Leaders[p] != rs.env.selfID
}

// deleteStray closes and removes this broker's copy of k, confirmed as
// assigned to replicas only, and reports whether it is gone.
func (rs *Manager) deleteStray(k partKey, replicas []int32) bool {
	// No fetch round is in flight while the gate is held, and the next
	// ones follow the view, which no longer gives k to a fetcher: nothing
	// appends to k, or opens it again, while it goes.
	rs.gate.Lock()
	defer rs.gate.Unlock()
	rs.mu.Lock()
	closed := rs.closed
	rs.mu.Unlock()
	if t, ok := rs.env.meta.Topic(k.topic); closed || !ok || !rs.notReplicaOf(t, k.p) {
		return false // shutting down, or the view changed since: decide again on the next change
	}
	dir := rs.env.logs.Dir(k.topic, k.p)
	var size int64
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if fi, err := e.Info(); err == nil {
				size += fi.Size()
			}
		}
	}
	for _, l := range rs.env.logs.Take(func(o partition.Key) bool { return o == partition.Key{Topic: k.topic, Partition: k.p} }) {
		if err := l.Delete(); err != nil {
			rs.env.logger.Error("deleting a partition this broker is no longer a replica of", "topic", k.topic, "partition", k.p, "err", err)
			return false
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		rs.env.logger.Error("deleting a partition this broker is no longer a replica of", "topic", k.topic, "partition", k.p, "dir", dir, "err", err)
		return false
	}
	rs.mu.Lock()
	delete(rs.learned, k)
	delete(rs.leading, k)
	rs.mu.Unlock()
	rs.env.logger.Info("deleted the local copy of a partition this broker is no longer a replica of",
		"topic", k.topic, "partition", k.p, "replicas", replicas, "dir", dir, "bytes", size)
	return true
}

// topicDeletionReader is cluster metadata that confirms a topic's
// deletion from the shared record itself (cluster.ZooKeeper).
type topicDeletionReader interface {
	TopicDeleted(topic string) (bool, error)
}

// TopicDeleted confirms that a topic missing from the view was deleted
// before its local partitions go (followMetadata): a topic node that
// exists but could not be read or decoded leaves the topic out of the
// view too, and must not cost its data. An unconfirmed topic is checked
// again by the stray remover until it is confirmed or back in the view.
func (rs *Manager) TopicDeleted(topic string) bool {
	e := rs.env
	r, ok := e.meta.(topicDeletionReader)
	if !ok {
		return true // the metadata is this broker's own: the view is the record
	}
	gone, err := r.TopicDeleted(topic)
	if err == nil && gone {
		return true
	}
	rs.mu.Lock()
	known := rs.unconfirmed[topic]
	rs.unconfirmed[topic] = true
	rs.mu.Unlock()
	if !known {
		e.logger.Warn("keeping the local partitions of a topic missing from the cluster view: its deletion is not confirmed; checking again",
			"topic", topic, "node_exists", err == nil, "err", err)
	}
	signal(rs.strayWake)
	return false
}

// recheckTopics deletes the local partitions of the topics topicDeleted
// could not confirm, once it can, and forgets those back in the view. It
// reports whether some are still unconfirmed.
func (rs *Manager) recheckTopics() (retry bool) {
	rs.mu.Lock()
	topics := slices.Collect(maps.Keys(rs.unconfirmed))
	rs.mu.Unlock()
	r, _ := rs.env.meta.(topicDeletionReader)
	for _, topic := range topics {
		if _, ok := rs.env.meta.Topic(topic); !ok && r != nil {
			if gone, err := r.TopicDeleted(topic); err != nil || !gone {
				retry = true
				continue
			}
			rs.env.logger.Info("topic deleted from the cluster; removing its local partitions", "topic", topic)
			rs.env.logs.DeleteTopic(topic)
		}
		rs.mu.Lock()
		delete(rs.unconfirmed, topic)
		rs.mu.Unlock()
	}
	return retry
}
